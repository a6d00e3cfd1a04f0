"""Building each zoo architecture from its configuration, with no weights, and feeding it the
inputs its users run: one function per kind of model (``BUILDERS``), each returning the GEMMs
traced at every input of the architecture, in one dtype.

transformers models are built and run under ``FakeTensorMode`` (meta-like tensors, on which
transformers skips its data-dependent checks as it does while compiling); timm and diffusers
models on the meta device. Nothing is allocated or computed. transformers, timm and diffusers
are imported here, inside functions, and only here.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ....problem import GemmProblem
from .families import Architecture
from .trace import TracedGemm, expert_gemms, trace_gemms

#: Mel frames Whisper's encoder takes (30 s of audio; its encoder runs on 1500 positions).
WHISPER_FRAMES = 3000
#: Audio samples per second of the wav2vec2-style speech encoders.
SAMPLE_RATE = 16000


@contextmanager
def _fake() -> Iterator[None]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        yield


def _torch_dtype(dtype: str):
    import torch

    return getattr(torch, dtype)


def _hf_config(arch: Architecture):
    from transformers import AutoConfig

    config = dict(arch.config)
    return AutoConfig.for_model(config.pop("model_type"), **config)


def _hf_model(arch: Architecture, auto: str, dtype: str):
    import transformers
    from transformers.initialization import no_init_weights

    cls = getattr(transformers, auto)
    with no_init_weights():  # random initialisation has no meaning on fake tensors, and some of it reads data
        # a model without attention still takes an implementation, and only "eager" is accepted
        attention = "eager" if arch.attention == "none" else arch.attention
        return cls.from_config(_hf_config(arch), attn_implementation=attention, dtype=_torch_dtype(dtype)).eval()


def _without_routed_experts(model) -> None:
    """Routed experts pick their tokens from the data, which fake tensors have not: their
    modules return zeros, and :func:`expert_gemms` describes their GEMMs instead."""
    import torch

    for module in model.modules():
        if type(module).__name__.endswith("Experts"):
            module.forward = types.MethodType(lambda self, hidden_states, *args, **kwargs: torch.zeros_like(hidden_states), module)


def causal_lm(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A decoder LLM (``AutoModelForCausalLM``): prefill of ``(batch, tokens)`` in ``arch.inputs``
    (logits of the last token only, as generation computes them) and one decode step of
    ``(batch, kv_length)`` in ``arch.decode`` against a cache of that length."""
    import torch

    traced: list[TracedGemm] = []
    computed: list[GemmProblem] = []
    with _fake(), torch.no_grad():
        model = _hf_model(arch, "AutoModelForCausalLM", dtype)
        _without_routed_experts(model)
        for batch, tokens in arch.inputs:
            ids = torch.zeros(batch, tokens, dtype=torch.long)
            traced += trace_gemms(model, lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1))
            computed += _experts(arch, batch * tokens, dtype)
        for batch, kv_length in arch.decode:
            out = model(input_ids=torch.zeros(batch, kv_length, dtype=torch.long), use_cache=True, logits_to_keep=1)
            # state-space models call their cache cache_params
            cache = {"cache_params": out.cache_params} if "cache_params" in out else {"past_key_values": out.past_key_values}
            step = torch.zeros(batch, 1, dtype=torch.long)
            traced += trace_gemms(model, lambda: model(input_ids=step, use_cache=True, **cache))
            computed += _experts(arch, batch, dtype)
    return traced, computed


def _experts(arch: Architecture, tokens: int, dtype: str) -> list[GemmProblem]:
    if arch.experts is None:
        return []
    count, top_k, intermediate = arch.experts
    return expert_gemms(arch.config["hidden_size"], intermediate, count, top_k, tokens, dtype)


def encoder(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A text encoder (``AutoModel``) on ``(batch, tokens)`` in ``arch.inputs``."""
    import torch

    traced: list[TracedGemm] = []
    with _fake(), torch.no_grad():
        model = _hf_model(arch, "AutoModel", dtype)
        for batch, tokens in arch.inputs:
            ids = torch.zeros(batch, tokens, dtype=torch.long)
            traced += trace_gemms(model, lambda: model(input_ids=ids))
    return traced, []


def seq2seq(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """An encoder-decoder (``AutoModel``): ``(batch, source tokens, target tokens)`` in ``arch.inputs``."""
    import torch

    traced: list[TracedGemm] = []
    with _fake(), torch.no_grad():
        model = _hf_model(arch, "AutoModel", dtype)
        for batch, source, target in arch.inputs:
            ids = torch.zeros(batch, source, dtype=torch.long)
            decoder_ids = torch.zeros(batch, target, dtype=torch.long)
            traced += trace_gemms(model, lambda: model(input_ids=ids, decoder_input_ids=decoder_ids, use_cache=False))
    return traced, []


def whisper(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """Whisper: 30 s of mel frames into the encoder, ``(batch, target tokens)`` of ``arch.inputs``
    into the decoder."""
    import torch

    traced: list[TracedGemm] = []
    with _fake(), torch.no_grad():
        model = _hf_model(arch, "AutoModel", dtype)
        for batch, target in arch.inputs:
            features = torch.zeros(batch, arch.config["num_mel_bins"], WHISPER_FRAMES, dtype=_torch_dtype(dtype))
            decoder_ids = torch.zeros(batch, target, dtype=torch.long)
            traced += trace_gemms(model, lambda: model(input_features=features, decoder_input_ids=decoder_ids, use_cache=False))
    return traced, []


def speech_encoder(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A wav2vec2-style encoder (``AutoModel``) on ``(batch, seconds)`` of 16 kHz audio."""
    import torch

    traced: list[TracedGemm] = []
    with _fake(), torch.no_grad():
        model = _hf_model(arch, "AutoModel", dtype)
        for batch, seconds in arch.inputs:
            audio = torch.zeros(batch, int(seconds * SAMPLE_RATE), dtype=_torch_dtype(dtype))
            traced += trace_gemms(model, lambda: model(input_values=audio))
    return traced, []


def text_image(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A CLIP-style pair of encoders (``AutoModel``): ``(batch, text tokens)`` in ``arch.inputs``,
    with images of the vision config's size."""
    import torch

    traced: list[TracedGemm] = []
    with _fake(), torch.no_grad():
        model = _hf_model(arch, "AutoModel", dtype)
        size = model.config.vision_config.image_size
        for batch, tokens in arch.inputs:
            ids = torch.zeros(batch, tokens, dtype=torch.long)
            pixels = torch.zeros(batch, 3, size, size, dtype=_torch_dtype(dtype))
            traced += trace_gemms(model, lambda: model(input_ids=ids, pixel_values=pixels))
    return traced, []


def timm_model(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A timm model (``create_model(pretrained=False)``) on ``(batch, image size)`` in
    ``arch.inputs``; attention is fused (sdpa) or eager as ``arch.attention`` says."""
    import timm
    import timm.layers
    import torch

    config = dict(arch.config)
    name = config.pop("name")
    traced: list[TracedGemm] = []
    fused = timm.layers.use_fused_attn()
    timm.layers.set_fused_attn(arch.attention == "sdpa")  # read by each attention layer as it is built
    try:
        # timm's weight initialisation reads data, which fake tensors lack; its forward reads none
        with torch.device("meta"), torch.no_grad():
            for batch, size in arch.inputs:
                # convolutional models take any image size, and no img_size argument
                sized = {} if name.startswith("convnext") else {"img_size": size}
                model = timm.create_model(name, pretrained=False, **sized, **config).to(_torch_dtype(dtype)).eval()
                images = torch.zeros(batch, 3, size, size, dtype=_torch_dtype(dtype))
                traced += trace_gemms(model, lambda: model(images))
    finally:
        timm.layers.set_fused_attn(bool(fused))
    return traced, []


def _diffusers_model(arch: Architecture, dtype: str):
    import diffusers

    config = dict(arch.config)
    model = getattr(diffusers, config.pop("class")).from_config(config).to(_torch_dtype(dtype)).eval()
    if arch.attention == "eager":
        from diffusers.models.attention_processor import AttnProcessor

        for module in model.modules():
            if hasattr(module, "set_processor"):
                module.set_processor(AttnProcessor())  # the classic processor: baddbmm, softmax, bmm
    return model


def unet(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A diffusers UNet: ``(batch, latent size, text tokens)`` in ``arch.inputs``; SDXL-style
    added conditions when the config asks for them."""
    import torch

    traced: list[TracedGemm] = []
    t = _torch_dtype(dtype)
    with torch.device("meta"), torch.no_grad():
        model = _diffusers_model(arch, dtype)
        cfg = model.config
        for batch, latent, tokens in arch.inputs:
            sample = torch.zeros(batch, cfg.in_channels, latent, latent, dtype=t)
            text = torch.zeros(batch, tokens, cfg.cross_attention_dim, dtype=t)
            added = None
            if cfg.addition_embed_type == "text_time":
                pooled = cfg.projection_class_embeddings_input_dim - 6 * cfg.addition_time_embed_dim
                added = {"text_embeds": torch.zeros(batch, pooled, dtype=t), "time_ids": torch.zeros(batch, 6, dtype=t)}
            step = torch.ones(batch, dtype=t)
            traced += trace_gemms(model, lambda: model(sample, step, encoder_hidden_states=text, added_cond_kwargs=added))
    return traced, []


def diffusion_transformer(arch: Architecture, dtype: str) -> tuple[list[TracedGemm], list[GemmProblem]]:
    """A diffusers transformer (DiT, PixArt, SD3, Flux): ``(batch, latent size, text tokens)``
    in ``arch.inputs``; the conditioning each class takes is built from its config."""
    import torch

    traced: list[TracedGemm] = []
    t = _torch_dtype(dtype)
    with torch.device("meta"), torch.no_grad():
        model = _diffusers_model(arch, dtype)
        cfg, kind = model.config, type(model).__name__
        for batch, latent, tokens in arch.inputs:
            step = torch.ones(batch, dtype=t)
            if kind == "FluxTransformer2DModel":
                # Flux packs 2x2 latent patches into a sequence before the transformer
                seq = (latent // 2) ** 2
                kwargs = dict(
                    hidden_states=torch.zeros(batch, seq, cfg.in_channels, dtype=t),
                    encoder_hidden_states=torch.zeros(batch, tokens, cfg.joint_attention_dim, dtype=t),
                    pooled_projections=torch.zeros(batch, cfg.pooled_projection_dim, dtype=t),
                    timestep=step, img_ids=torch.zeros(seq, 3, dtype=t), txt_ids=torch.zeros(tokens, 3, dtype=t),
                    guidance=step if cfg.guidance_embeds else None,
                )  # fmt: skip
            else:
                kwargs = dict(hidden_states=torch.zeros(batch, cfg.in_channels, latent, latent, dtype=t), timestep=step)
                if kind == "SD3Transformer2DModel":
                    kwargs["encoder_hidden_states"] = torch.zeros(batch, tokens, cfg.joint_attention_dim, dtype=t)
                    kwargs["pooled_projections"] = torch.zeros(batch, cfg.pooled_projection_dim, dtype=t)
                elif kind == "PixArtTransformer2DModel":
                    kwargs["encoder_hidden_states"] = torch.zeros(batch, tokens, cfg.caption_channels, dtype=t)
                    size = torch.full((batch, 2), float(latent * 8), dtype=t)
                    kwargs["added_cond_kwargs"] = {"resolution": size, "aspect_ratio": torch.ones(batch, 1, dtype=t)}
                elif kind == "DiTTransformer2DModel":
                    kwargs["class_labels"] = torch.zeros(batch, dtype=torch.long)
            traced += trace_gemms(model, lambda: model(**kwargs))
    return traced, []


BUILDERS: dict[str, Callable[[Architecture, str], tuple[list[TracedGemm], list[GemmProblem]]]] = {
    "causal-lm": causal_lm,
    "encoder": encoder,
    "seq2seq": seq2seq,
    "whisper": whisper,
    "speech-encoder": speech_encoder,
    "text-image": text_image,
    "timm": timm_model,
    "unet": unet,
    "diffusion-transformer": diffusion_transformer,
}
