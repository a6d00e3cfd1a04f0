"""The zoo's architectures: published configuration values, typed in (nothing is downloaded),
with the inputs each one's users run, the dtypes, the attention that was traced, and the
tensor-parallel degrees of large decoders.

Repeating layers are cut to one or two (``num_hidden_layers`` and kin): the problems of a
repeated layer are the same, and the zoo lists each problem once per family. ``inputs`` depend
on the builder (``models.BUILDERS``): ``(batch, tokens)`` for text, ``(batch, image size)``
for timm, ``(batch, seconds)`` for wav2vec2-style audio, ``(batch, source, target)`` for
encoder-decoders, ``(batch, latent size, text tokens)`` for diffusion. ``decode`` lists
``(batch, kv_length)`` decode steps. A dtype ``"tf32"`` means float32 with TF32 allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The groups a family belongs to.
GROUPS = ("decoder_llm", "moe", "encoder_text", "encoder_vision", "speech", "encoder_decoder", "diffusion", "ssm")


@dataclass(frozen=True)
class Architecture:
    """One model configuration of the zoo.

    ``attention`` is ``"eager"`` (attention products traced as bmm/baddbmm), ``"sdpa"``
    (fused attention: no GEMM recorded) or ``"none"`` (state-space models). ``experts`` is ``(routed experts, experts per token,
    expert intermediate size)`` for MoE decoders, whose expert GEMMs are computed, not traced.
    """

    model: str
    family: str
    group: str
    builder: str
    config: dict[str, Any]
    inputs: tuple[tuple[int, ...], ...]
    attention: str = "sdpa"
    decode: tuple[tuple[int, int], ...] = ()
    dtypes: tuple[str, ...] = ("bfloat16",)
    tp: tuple[int, ...] = ()
    experts: tuple[int, int, int] | None = None


def _llama(hidden, intermediate, heads, kv_heads, vocab, **extra):
    return {"model_type": "llama", "hidden_size": hidden, "intermediate_size": intermediate, "num_attention_heads": heads,
            "num_key_value_heads": kv_heads, "vocab_size": vocab, "num_hidden_layers": 1, **extra}  # fmt: skip


def _bert(model_type, hidden, heads, intermediate, vocab, **extra):
    return {"model_type": model_type, "hidden_size": hidden, "num_attention_heads": heads, "intermediate_size": intermediate,
            "vocab_size": vocab, "num_hidden_layers": 1, **extra}  # fmt: skip


def _encdec(model_type, d_model, heads, ffn, vocab, **extra):
    return {"model_type": model_type, "d_model": d_model, "encoder_attention_heads": heads, "decoder_attention_heads": heads,
            "encoder_ffn_dim": ffn, "decoder_ffn_dim": ffn, "vocab_size": vocab, "encoder_layers": 1, "decoder_layers": 1, **extra}  # fmt: skip


A = Architecture
ARCHITECTURES: tuple[Architecture, ...] = (
    # ---- decoder LLMs: prefill of one prompt (batch 1) or a few, decode steps against a KV cache
    A("Llama-3.2-1B", "llama", "decoder_llm", "causal-lm", _llama(2048, 8192, 32, 8, 128256, head_dim=64, tie_word_embeddings=True),
      inputs=((1, 7), (1, 333), (1, 2047), (1, 16384), (4, 1000)), decode=((1, 1000), (16, 2047), (256, 500)), attention="eager"),
    A("Llama-3.2-3B", "llama", "decoder_llm", "causal-lm", _llama(3072, 8192, 24, 8, 128256, head_dim=128, tie_word_embeddings=True),
      inputs=((1, 100), (1, 1500), (2, 4096)), decode=((8, 333), (64, 4096)), attention="eager"),
    A("Llama-3.1-8B", "llama", "decoder_llm", "causal-lm", _llama(4096, 14336, 32, 8, 128256),
      inputs=((1, 77), (1, 500), (1, 3000), (1, 8192)), decode=((1, 4096), (24, 1500), (128, 1000)), attention="eager", tp=(2,)),
    A("Llama-3.1-70B", "llama", "decoder_llm", "causal-lm", _llama(8192, 28672, 64, 8, 128256),
      inputs=((1, 257), (1, 1000), (1, 5000)), decode=((1, 2048), (48, 1000), (200, 500)), tp=(4, 8)),
    A("Mistral-7B-v0.1", "mistral", "decoder_llm", "causal-lm",
      dict(_llama(4096, 14336, 32, 8, 32000), model_type="mistral", sliding_window=4096),
      inputs=((1, 197), (1, 1000), (1, 4096)), decode=((4, 2000), (32, 4096)), tp=(2,)),
    A("Mistral-Nemo-12B", "mistral", "decoder_llm", "causal-lm",
      dict(_llama(5120, 14336, 32, 8, 131072, head_dim=128), model_type="mistral", sliding_window=None),
      inputs=((1, 100), (1, 2047)), decode=((1, 8192), (16, 1000)), dtypes=("float16",), tp=(4,)),
    A("Qwen2.5-0.5B", "qwen2", "decoder_llm", "causal-lm",
      dict(_llama(896, 4864, 14, 2, 151936, tie_word_embeddings=True), model_type="qwen2"),
      inputs=((1, 13), (1, 500), (8, 333), (1, 16384)), decode=((1, 100), (32, 1000), (256, 2047))),
    A("Qwen2.5-7B", "qwen2", "decoder_llm", "causal-lm", dict(_llama(3584, 18944, 28, 4, 152064), model_type="qwen2"),
      inputs=((1, 77), (1, 1500), (1, 4096)), decode=((2, 1000), (64, 512)), tp=(2, 4)),
    A("Qwen2.5-72B", "qwen2", "decoder_llm", "causal-lm", dict(_llama(8192, 29568, 64, 8, 152064), model_type="qwen2"),
      inputs=((1, 333), (1, 2048)), decode=((1, 4096), (100, 1000)), tp=(4, 8)),
    A("Gemma-2-2B", "gemma2", "decoder_llm", "causal-lm",
      dict(_llama(2304, 9216, 8, 4, 256000, head_dim=256), model_type="gemma2", num_hidden_layers=2),
      inputs=((1, 100), (1, 1000), (4, 4096)), decode=((1, 500), (32, 2047)), attention="eager"),
    A("Gemma-2-9B", "gemma2", "decoder_llm", "causal-lm",
      dict(_llama(3584, 14336, 16, 8, 256000, head_dim=256), model_type="gemma2", num_hidden_layers=2),
      inputs=((1, 333), (1, 3000)), decode=((8, 4096),), attention="eager", tp=(2,)),
    A("Phi-3-mini-4k", "phi3", "decoder_llm", "causal-lm", dict(_llama(3072, 8192, 32, 32, 32064), model_type="phi3"),
      inputs=((1, 50), (1, 777), (1, 4000)), decode=((1, 2000), (40, 1000)), dtypes=("float16",)),
    A("GPT-2", "gpt2", "decoder_llm", "causal-lm", dict(model_type="gpt2", n_embd=768, n_head=12, n_layer=1, vocab_size=50257),
      inputs=((1, 7), (8, 100), (1, 1024), (16, 512)), decode=((1, 1023), (64, 257)), attention="eager", dtypes=("float16", "float32")),
    A("GPT-2-XL", "gpt2", "decoder_llm", "causal-lm", dict(model_type="gpt2", n_embd=1600, n_head=25, n_layer=1, vocab_size=50257),
      inputs=((1, 300), (4, 1024)), decode=((12, 500),), attention="eager", dtypes=("float16",)),
    A("OPT-350m", "opt", "decoder_llm", "causal-lm",
      dict(model_type="opt", hidden_size=1024, ffn_dim=4096, num_attention_heads=16, word_embed_proj_dim=512,
           do_layer_norm_before=False, vocab_size=50272, num_hidden_layers=1),
      inputs=((1, 77), (4, 2048)), decode=((32, 200),), attention="eager", dtypes=("float16",)),
    A("OPT-1.3B", "opt", "decoder_llm", "causal-lm",
      dict(model_type="opt", hidden_size=2048, ffn_dim=8192, num_attention_heads=32, word_embed_proj_dim=2048,
           vocab_size=50272, num_hidden_layers=1),
      inputs=((1, 33), (1, 1500)), decode=((8, 1024),), dtypes=("float16",)),
    A("Falcon-7B", "falcon", "decoder_llm", "causal-lm",
      dict(model_type="falcon", hidden_size=4544, num_attention_heads=71, multi_query=True, new_decoder_architecture=False,
           parallel_attn=True, bias=False, vocab_size=65024, num_hidden_layers=1),
      inputs=((1, 100), (1, 2047)), decode=((1, 1000), (16, 500))),
    A("Pythia-160m", "gpt-neox", "decoder_llm", "causal-lm",
      dict(model_type="gpt_neox", hidden_size=768, num_attention_heads=12, intermediate_size=3072, vocab_size=50304,
           rotary_pct=0.25, num_hidden_layers=1),
      inputs=((1, 500), (8, 2048)), decode=((128, 100),), attention="eager", dtypes=("float16",)),
    A("Pythia-1.4B", "gpt-neox", "decoder_llm", "causal-lm",
      dict(model_type="gpt_neox", hidden_size=2048, num_attention_heads=16, intermediate_size=8192, vocab_size=50304,
           rotary_pct=0.25, num_hidden_layers=1),
      inputs=((1, 77), (1, 2000)), decode=((4, 1000),), attention="eager", dtypes=("float16",)),
    A("BLOOM-560m", "bloom", "decoder_llm", "causal-lm",
      dict(model_type="bloom", hidden_size=1024, n_head=16, vocab_size=250880, n_layer=1),
      inputs=((1, 7), (1, 333), (2, 1000)), decode=((1, 500), (24, 2047)), attention="eager"),
    A("BLOOM-1b7", "bloom", "decoder_llm", "causal-lm",
      dict(model_type="bloom", hidden_size=2048, n_head=16, vocab_size=250880, n_layer=1),
      inputs=((1, 100), (1, 1500)), decode=((8, 777),), attention="eager", dtypes=("float16",)),
    A("OLMo-1B", "olmo", "decoder_llm", "causal-lm", dict(_llama(2048, 8192, 16, 16, 50304), model_type="olmo"),
      inputs=((1, 200), (2, 2048)), decode=((16, 2048),)),
    A("OLMo-2-7B", "olmo", "decoder_llm", "causal-lm", dict(_llama(4096, 11008, 32, 32, 100352), model_type="olmo2"),
      inputs=((1, 1000), (1, 4096)), decode=((1, 333), (64, 1500))),
    # ---- mixture of experts: attention, routers and shared experts traced, routed experts computed
    A("Mixtral-8x7B", "mixtral", "moe", "causal-lm",
      dict(_llama(4096, 14336, 32, 8, 32000), model_type="mixtral", num_local_experts=8, num_experts_per_tok=2),
      inputs=((1, 77), (1, 1000), (1, 4096)), decode=((1, 2048), (32, 1000), (256, 500)), experts=(8, 2, 14336), tp=(2,)),
    A("Qwen1.5-MoE-A2.7B", "qwen-moe", "moe", "causal-lm",
      dict(_llama(2048, 5632, 16, 16, 151936), model_type="qwen2_moe", moe_intermediate_size=1408,
           shared_expert_intermediate_size=5632, num_experts=60, num_experts_per_tok=4),
      inputs=((1, 333), (1, 3000)), decode=((8, 1000), (64, 500)), experts=(60, 4, 1408)),
    A("Qwen3-30B-A3B", "qwen-moe", "moe", "causal-lm",
      dict(_llama(2048, 6144, 32, 4, 151936, head_dim=128), model_type="qwen3_moe", moe_intermediate_size=768,
           num_experts=128, num_experts_per_tok=8),
      inputs=((1, 1000), (1, 8192)), decode=((16, 2048), (128, 1000)), experts=(128, 8, 768)),
    A("OLMoE-1B-7B", "olmoe", "moe", "causal-lm",
      dict(_llama(2048, 1024, 16, 16, 50304), model_type="olmoe", num_experts=64, num_experts_per_tok=8),
      inputs=((1, 500), (4, 2047)), decode=((1, 1000), (48, 1000)), experts=(64, 8, 1024)),
    A("DeepSeek-V2-Lite", "deepseek-v2", "moe", "causal-lm",
      dict(_llama(2048, 10944, 16, 16, 102400), model_type="deepseek_v2", num_hidden_layers=2, moe_intermediate_size=1408,
           n_routed_experts=64, n_shared_experts=2, num_experts_per_tok=6, kv_lora_rank=512, q_lora_rank=None,
           qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, first_k_dense_replace=1),
      inputs=((1, 100), (1, 2048)), decode=((4, 1000), (64, 300)), attention="eager", experts=(64, 6, 1408)),
    # ---- text encoders: batches of sentences, fp32 with and without TF32 among them
    A("BERT-base", "bert", "encoder_text", "encoder", _bert("bert", 768, 12, 3072, 30522),
      inputs=((1, 9), (32, 128), (8, 512), (64, 77)), attention="eager", dtypes=("float32", "tf32", "float16")),
    A("BERT-large", "bert", "encoder_text", "encoder", _bert("bert", 1024, 16, 4096, 30522),
      inputs=((16, 128), (4, 384)), attention="eager", dtypes=("tf32",)),
    A("RoBERTa-base", "roberta", "encoder_text", "encoder", _bert("roberta", 768, 12, 3072, 50265, max_position_embeddings=514),
      inputs=((1, 40), (32, 256)), dtypes=("float16", "float32")),
    A("RoBERTa-large", "roberta", "encoder_text", "encoder", _bert("roberta", 1024, 16, 4096, 50265, max_position_embeddings=514),
      inputs=((8, 512),), attention="eager", dtypes=("tf32",)),
    A("XLM-R-large", "xlm-roberta", "encoder_text", "encoder",
      _bert("xlm-roberta", 1024, 16, 4096, 250002, max_position_embeddings=514),
      inputs=((1, 100), (16, 256)), dtypes=("float16", "tf32")),
    A("DeBERTa-v3-base", "deberta", "encoder_text", "encoder",
      _bert("deberta-v2", 768, 12, 3072, 128100, relative_attention=True, position_buckets=256, pos_att_type=["p2c", "c2p"],
            max_relative_positions=-1, norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False),
      inputs=((1, 60), (16, 256)), attention="eager", dtypes=("float32", "bfloat16")),
    A("DistilBERT-base", "distilbert", "encoder_text", "encoder",
      dict(model_type="distilbert", dim=768, n_heads=12, hidden_dim=3072, n_layers=1, vocab_size=30522),
      inputs=((1, 25), (64, 128)), attention="eager", dtypes=("float32", "tf32")),
    A("ALBERT-base-v2", "albert", "encoder_text", "encoder", _bert("albert", 768, 12, 3072, 30000, embedding_size=128),
      inputs=((8, 128), (2, 333)), attention="eager", dtypes=("float32",)),
    A("ALBERT-xxlarge-v2", "albert", "encoder_text", "encoder", _bert("albert", 4096, 64, 16384, 30000, embedding_size=128),
      inputs=((4, 128),), dtypes=("tf32",)),
    A("ELECTRA-small", "electra", "encoder_text", "encoder", _bert("electra", 256, 4, 1024, 30522, embedding_size=128),
      inputs=((32, 128), (1, 500)), attention="eager", dtypes=("float32", "tf32")),
    A("ELECTRA-base", "electra", "encoder_text", "encoder", _bert("electra", 768, 12, 3072, 30522, embedding_size=768),
      inputs=((16, 256),), dtypes=("float16",)),
    A("ModernBERT-base", "modernbert", "encoder_text", "encoder",
      _bert("modernbert", 768, 12, 1152, 50368, global_attn_every_n_layers=3, num_hidden_layers=3),
      inputs=((1, 1000), (8, 512), (2, 8192)), attention="eager", dtypes=("bfloat16",)),
    A("ModernBERT-large", "modernbert", "encoder_text", "encoder",
      _bert("modernbert", 1024, 16, 2624, 50368, global_attn_every_n_layers=3, num_hidden_layers=3),
      inputs=((4, 1500),), dtypes=("bfloat16",)),
    # ---- vision encoders (timm): image batches; eager attention where ``attention`` says so
    A("ViT-B/16", "vit", "encoder_vision", "timm", {"name": "vit_base_patch16_224", "depth": 1},
      inputs=((1, 224), (32, 224), (8, 384)), attention="eager", dtypes=("float32", "tf32", "bfloat16")),
    A("ViT-L/16", "vit", "encoder_vision", "timm", {"name": "vit_large_patch16_224", "depth": 1},
      inputs=((16, 224),), attention="eager", dtypes=("float16",)),
    A("ViT-H/14", "vit", "encoder_vision", "timm", {"name": "vit_huge_patch14_224", "depth": 1},
      inputs=((4, 224),), dtypes=("bfloat16",)),
    A("DeiT-S", "deit", "encoder_vision", "timm", {"name": "deit_small_patch16_224", "depth": 1},
      inputs=((64, 224),), attention="eager", dtypes=("float32", "tf32")),
    A("DeiT-B-distilled", "deit", "encoder_vision", "timm", {"name": "deit_base_distilled_patch16_224", "depth": 1},
      inputs=((1, 224), (16, 224)), attention="eager", dtypes=("float16",)),
    A("BEiT-B/16", "beit", "encoder_vision", "timm", {"name": "beit_base_patch16_224", "depth": 1},
      inputs=((8, 224),), attention="eager", dtypes=("float32", "bfloat16")),
    A("Swin-T", "swin", "encoder_vision", "timm", {"name": "swin_tiny_patch4_window7_224", "depths": (1, 1, 1, 1)},
      inputs=((1, 224), (32, 224)), attention="eager", dtypes=("tf32",)),
    A("Swin-B", "swin", "encoder_vision", "timm", {"name": "swin_base_patch4_window7_224", "depths": (1, 1, 1, 1)},
      inputs=((8, 224),), attention="eager", dtypes=("float16",)),
    A("ConvNeXt-T", "convnext", "encoder_vision", "timm", {"name": "convnext_tiny", "depths": (1, 1, 1, 1)},
      inputs=((1, 224), (16, 224)), dtypes=("float32", "tf32")),
    A("ConvNeXt-B", "convnext", "encoder_vision", "timm", {"name": "convnext_base", "depths": (1, 1, 1, 1)},
      inputs=((8, 288),), dtypes=("bfloat16",)),
    A("DINOv2-B/14", "dinov2", "encoder_vision", "timm", {"name": "vit_base_patch14_dinov2", "depth": 1},
      inputs=((1, 518), (4, 224)), attention="eager", dtypes=("float16", "tf32")),
    A("DINOv2-L/14-reg", "dinov2", "encoder_vision", "timm", {"name": "vit_large_patch14_reg4_dinov2", "depth": 1},
      inputs=((2, 518),), dtypes=("bfloat16",)),
    A("EVA02-B/14", "eva", "encoder_vision", "timm", {"name": "eva02_base_patch14_224", "depth": 1},
      inputs=((8, 224),), dtypes=("float16",)),
    A("CLIP-ViT-B/32", "clip", "encoder_vision", "text-image",
      {"model_type": "clip", "projection_dim": 512,
       "text_config": {"hidden_size": 512, "intermediate_size": 2048, "num_attention_heads": 8, "num_hidden_layers": 1},
       "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 1,
                         "image_size": 224, "patch_size": 32}},
      inputs=((1, 77), (64, 77)), attention="eager", dtypes=("float16", "float32")),
    A("CLIP-ViT-L/14", "clip", "encoder_vision", "text-image",
      {"model_type": "clip", "projection_dim": 768,
       "text_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 1},
       "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 1,
                         "image_size": 224, "patch_size": 14}},
      inputs=((8, 77),), attention="eager", dtypes=("float16",)),
    A("SigLIP-B/16", "siglip", "encoder_vision", "text-image",
      {"model_type": "siglip",
       "text_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 1,
                       "vocab_size": 32000, "max_position_embeddings": 64},
       "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 1,
                         "image_size": 224, "patch_size": 16}},
      inputs=((1, 64), (32, 64)), dtypes=("bfloat16", "tf32")),
    # ---- speech: Whisper's encoder on 1500 positions, wav2vec2-style encoders on seconds of audio
    A("Whisper-small", "whisper", "speech", "whisper",
      _encdec("whisper", 768, 12, 3072, 51865, num_mel_bins=80),
      inputs=((1, 1), (1, 100), (8, 30)), attention="eager", dtypes=("float16", "float32")),
    A("Whisper-large-v3", "whisper", "speech", "whisper",
      _encdec("whisper", 1280, 20, 5120, 51866, num_mel_bins=128),
      inputs=((1, 7), (4, 200)), attention="eager", dtypes=("float16",)),
    A("Wav2Vec2-base", "wav2vec2", "speech", "speech-encoder",
      _bert("wav2vec2", 768, 12, 3072, 32), inputs=((1, 5), (8, 10)), dtypes=("float32", "tf32")),
    A("HuBERT-large", "hubert", "speech", "speech-encoder",
      _bert("hubert", 1024, 16, 4096, 32, feat_extract_norm="layer", do_stable_layer_norm=True),
      inputs=((1, 3), (4, 30)), attention="eager", dtypes=("float16",)),
    # ---- encoder-decoders: (batch, source tokens, target tokens)
    A("T5-base", "t5", "encoder_decoder", "seq2seq",
      {"model_type": "t5", "d_model": 768, "d_ff": 3072, "d_kv": 64, "num_heads": 12, "num_layers": 1,
       "num_decoder_layers": 1, "vocab_size": 32128},
      inputs=((1, 100, 7), (16, 512, 64)), attention="eager", dtypes=("float32", "tf32")),
    A("FLAN-T5-large", "t5", "encoder_decoder", "seq2seq",
      {"model_type": "t5", "d_model": 1024, "d_ff": 2816, "d_kv": 64, "num_heads": 16, "num_layers": 1,
       "num_decoder_layers": 1, "vocab_size": 32128, "feed_forward_proj": "gated-gelu"},
      inputs=((4, 333, 33),), attention="eager", dtypes=("bfloat16",)),
    A("BART-base", "bart", "encoder_decoder", "seq2seq", _encdec("bart", 768, 12, 3072, 50265),
      inputs=((1, 200, 20), (8, 1024, 128)), attention="eager", dtypes=("bfloat16",)),
    A("BART-large", "bart", "encoder_decoder", "seq2seq", _encdec("bart", 1024, 16, 4096, 50265),
      inputs=((4, 500, 57),), dtypes=("float32",)),
    A("mBART-large-50", "mbart", "encoder_decoder", "seq2seq", _encdec("mbart", 1024, 16, 4096, 250054),
      inputs=((1, 77, 77), (8, 128, 100)), attention="eager", dtypes=("float16",)),
    A("Marian-en-de", "marian", "encoder_decoder", "seq2seq",
      _encdec("marian", 512, 8, 2048, 58101, decoder_vocab_size=58101),
      inputs=((1, 40, 43), (32, 128, 128)), attention="eager", dtypes=("float32", "bfloat16")),
    # ---- diffusion: (batch, latent size, text tokens); one or two blocks where blocks repeat
    A("SD-1.5-UNet", "sd-unet", "diffusion", "unet",
      {"class": "UNet2DConditionModel", "sample_size": 64, "cross_attention_dim": 768, "attention_head_dim": 8,
       "block_out_channels": (320, 640, 1280, 1280), "layers_per_block": 2},
      inputs=((2, 64, 77), (1, 96, 77)), attention="eager", dtypes=("float16",)),
    A("SDXL-UNet", "sd-unet", "diffusion", "unet",
      {"class": "UNet2DConditionModel", "sample_size": 128, "cross_attention_dim": 2048, "attention_head_dim": (5, 10, 20),
       "block_out_channels": (320, 640, 1280), "layers_per_block": 2, "transformer_layers_per_block": (1, 1, 1),
       "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
       "up_block_types": ("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"), "use_linear_projection": True,
       "addition_embed_type": "text_time", "addition_time_embed_dim": 256, "projection_class_embeddings_input_dim": 2816},
      inputs=((2, 128, 77),), dtypes=("float16",)),
    A("SD3-medium", "sd3", "diffusion", "diffusion-transformer",
      {"class": "SD3Transformer2DModel", "sample_size": 128, "patch_size": 2, "in_channels": 16, "out_channels": 16,
       "num_layers": 2, "attention_head_dim": 64, "num_attention_heads": 24, "joint_attention_dim": 4096,
       "caption_projection_dim": 1536, "pooled_projection_dim": 2048, "pos_embed_max_size": 192},
      inputs=((2, 128, 333), (1, 64, 154))),
    A("Flux.1-dev", "flux", "diffusion", "diffusion-transformer",
      {"class": "FluxTransformer2DModel", "patch_size": 1, "in_channels": 64, "num_layers": 1, "num_single_layers": 1,
       "attention_head_dim": 128, "num_attention_heads": 24, "joint_attention_dim": 4096, "pooled_projection_dim": 768,
       "guidance_embeds": True, "axes_dims_rope": (16, 56, 56)},
      inputs=((1, 128, 512), (1, 64, 256))),
    A("DiT-XL/2-256", "dit", "diffusion", "diffusion-transformer",
      {"class": "DiTTransformer2DModel", "num_attention_heads": 16, "attention_head_dim": 72, "in_channels": 4,
       "out_channels": 8, "num_layers": 2, "sample_size": 32, "patch_size": 2, "num_embeds_ada_norm": 1000},
      inputs=((8, 32, 0), (1, 64, 0)), attention="eager", dtypes=("float16", "tf32")),
    A("PixArt-alpha-XL-1024", "pixart", "diffusion", "diffusion-transformer",
      {"class": "PixArtTransformer2DModel", "num_attention_heads": 16, "attention_head_dim": 72, "in_channels": 4,
       "out_channels": 8, "num_layers": 2, "cross_attention_dim": 1152, "caption_channels": 4096, "sample_size": 128,
       "patch_size": 2, "use_additional_conditions": True, "norm_type": "ada_norm_single"},
      inputs=((2, 128, 120),), dtypes=("float16",)),
    # ---- state-space models: the reference (no custom kernel) path of transformers
    A("Mamba-130m", "mamba", "ssm", "causal-lm",
      {"model_type": "mamba", "hidden_size": 768, "state_size": 16, "expand": 2, "vocab_size": 50280, "num_hidden_layers": 1},
      inputs=((1, 77), (4, 500)), decode=((32, 100),), attention="none", dtypes=("float32", "bfloat16")),
    A("Mamba-1.4b", "mamba", "ssm", "causal-lm",
      {"model_type": "mamba", "hidden_size": 2048, "state_size": 16, "expand": 2, "vocab_size": 50280, "num_hidden_layers": 1},
      inputs=((1, 1000),), decode=((8, 1000),), attention="none"),
    A("Mamba2-1.3b", "mamba2", "ssm", "causal-lm",
      {"model_type": "mamba2", "hidden_size": 2048, "state_size": 128, "num_heads": 64, "head_dim": 64, "n_groups": 1,
       "expand": 2, "vocab_size": 50288, "num_hidden_layers": 1, "chunk_size": 256},
      inputs=((1, 100), (2, 1024)), decode=((16, 500),), attention="none"),
)
