"""Every private Inductor call DIODE makes outside the documented seams, with the torch versions it
was checked on: the places where torch 2.11 (GPU machines) and 2.13 differ internally, and those
where they agree but nothing public offers the same.

Each shim names the versions it covers; tests/test_inductor_compat.py,
tests/test_inductor_configs.py and (the measuring shims) tests/test_measure_cpu.py and
tests/test_measure_gpu.py exercise them; tests/test_lone_choice_cpu.py the template modules left
unloaded; tests/test_deferred_measure_cpu.py the deferred selection.

One module because it is the one list of what DIODE relies on inside Inductor: when torch
changes, each shim here is checked against the new source in one place.
"""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from types import ModuleType
from typing import Any


def make_config_entry(name: str, default: Any, value_type: Any) -> Any:
    """A ``_ConfigEntry`` for an injected option.

    torch 2.11: ``_ConfigEntry(config)``; torch 2.13: ``_ConfigEntry(config, name)`` (the name
    labels the per-thread ContextVar that holds user overrides).
    """
    from torch.utils._config_module import _Config, _ConfigEntry

    config = _Config(default=default, value_type=value_type)
    if len(inspect.signature(_ConfigEntry.__init__).parameters) >= 3:
        return _ConfigEntry(config, name)
    return _ConfigEntry(config)


def mark_config_dirty(module: ModuleType) -> None:
    """Invalidate a config module's memoized hash and ``save_config`` dictionaries.

    torch 2.13 keeps them in ContextVars (``_hash_dirty_var``, ``_get_dict_dirty_keys_var``,
    ``None`` meaning "fully dirty"); torch 2.11 in ``_is_dirty``/``_hash_digest`` attributes.
    """
    if hasattr(module, "_hash_dirty_var"):
        module._hash_dirty_var.set(True)
        module._get_dict_dirty_keys_var.set(None)
    else:
        module._is_dirty = True
        module._hash_digest = None


def set_in_code(entry: Any) -> bool:
    """Whether code has given a config entry a value: assignment, ``config.patch`` (also the
    value a finished patch restores), ``torch.compile(options=...)``.

    torch 2.13 keeps that value in a per-thread ContextVar (``user_override``), torch 2.11 in a
    plain attribute; unset, either holds ``_UNSET_SENTINEL``.
    """
    from torch.utils._config_module import _UNSET_SENTINEL

    value = entry.user_override
    if isinstance(value, ContextVar):
        value = value.get()
    return value is not _UNSET_SENTINEL


def mm_template_configs(
    template: str, op: str, search_space: str, mnk: tuple[int, int, int], dtype_bytes: int, smem_limit: int
) -> list[Any]:
    """Inductor's ``triton.Config`` list for a GEMM template, as max-autotune generates it: the
    steps of ``BaseConfigHeuristic.preprocess_mm_configs`` with shared-memory pruning on (scale
    block sizes to the shape, drop configs whose estimated shared memory exceeds ``smem_limit``
    bytes, drop certain register spills in EXHAUSTIVE, clamp warps to the tile, deduplicate).

    torch 2.11 and 2.13 alike: ``get_template_heuristic``, the heuristic's ``exhaustive_configs``
    and ``mm_configs`` and its private ``_filter_configs``, ``_scale_mm_configs`` (which reads
    size hints from the current graph, so plain ints get an empty graph handler),
    ``get_shared_memory_estimation``, ``_prune_reg_spill_configs`` and ``_finalize_mm_configs``.
    """
    from torch._inductor.sizevars import SizeVarAllocator
    from torch._inductor.template_heuristics.registry import get_template_heuristic
    from torch._inductor.virtualized import V

    heuristic = get_template_heuristic(template, "cuda", op)
    configs = heuristic.exhaustive_configs if search_space == "EXHAUSTIVE" else heuristic.mm_configs
    configs = heuristic._filter_configs(list(configs))
    m, n, k = mnk
    with V.set_graph_handler(types.SimpleNamespace(sizevars=SizeVarAllocator())):
        scaled = heuristic._scale_mm_configs(m, n, k, configs, 1.0, False, lambda m, n, k: False)
    scaled = [c for c in scaled if heuristic.get_shared_memory_estimation(c, dtype_bytes, False, 0) <= smem_limit]
    if search_space == "EXHAUSTIVE":
        scaled = heuristic._prune_reg_spill_configs(scaled)
    return heuristic._finalize_mm_configs(scaled)


def benchmark_inputs(choices: list[Any], input_nodes: list[Any], layout: Any, input_gen_fns: Any) -> Any:
    """The example tensors Inductor's autotuner would benchmark ``choices`` with (one set shared
    by all: ``AutotuneArgs``, extern and Triton views of the same buffers).

    torch 2.11 and 2.13 alike: ``AlgorithmSelectorCache.get_inputs(choices, input_nodes, layout,
    input_gen_fns)`` (2.13 adds an optional ``hint_override``).
    """
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    return AlgorithmSelectorCache.get_inputs(choices, input_nodes, layout, input_gen_fns)


def can_launch(choice: Any) -> bool:
    """Whether :func:`run_callable` knows how to launch ``choice``: an ``ExternKernelCaller``
    (ATen), a ``TritonTemplateCaller`` or a ``SubgraphChoiceCaller`` (decompose-k), on torch 2.11
    and 2.13 alike; not a CUTLASS or CPP template choice."""
    from torch._inductor.select_algorithm import ExternKernelCaller, TritonTemplateCaller

    return isinstance(choice, (ExternKernelCaller, TritonTemplateCaller)) or is_subgraph(choice)


def is_subgraph(choice: Any) -> bool:
    """A ``SubgraphChoiceCaller`` (decompose-k: several kernels) that compiles its module as
    torch 2.11 and 2.13 both do (``_compile_for_benchmarking`` into ``_compiled_module``, called
    with ``sym_input_values`` before the inputs)."""
    from torch._inductor.codegen.subgraph import SubgraphChoiceCaller

    return isinstance(choice, SubgraphChoiceCaller) and all(
        hasattr(choice, name) for name in ("_compile_for_benchmarking", "_compiled_module", "sym_input_values")
    )


def run_callable(choice: Any, autotune_args: Any) -> tuple[Any, Any]:
    """``(run, release)`` for a choice :func:`can_launch`: ``run()`` launches it once on the
    shared example tensors as Inductor's ``choice.benchmark`` would, ``release()`` frees what
    making ``run`` loaded.

    torch 2.11 and 2.13 alike: an ``ExternKernelCaller``'s ``to_callable()`` (its kwargs bound)
    with ``out=`` when ``has_out_variant``; a ``TritonTemplateCaller``'s
    ``bmreq.make_run_fn(*inputs, out=out)``, which binds the current CUDA stream. 2.13's
    ``bmreq.cleanup_run_fn`` releases the loaded module; 2.11 has nothing to release. A
    ``SubgraphChoiceCaller`` compiles its module here, as its own ``benchmark`` does (it needs
    the lowering's ``V.graph``, so not in :func:`measure_choices`'s threads), and runs
    ``module.call([*sym_input_values, *inputs])`` on the extern inputs (2.13's
    ``_is_extern``), allocating its output.
    """
    import functools

    from torch._inductor.select_algorithm import ExternKernelCaller

    if isinstance(choice, ExternKernelCaller):
        inputs, out = autotune_args.get_benchmark_tensors(True).unpack()
        fn = choice.to_callable()
        run = functools.partial(fn, *inputs, out=out) if choice.has_out_variant else functools.partial(fn, *inputs)
        return run, lambda: None
    if is_subgraph(choice):
        if choice._compiled_module is None:
            choice._compiled_module = choice._compile_for_benchmarking()
        inputs, _ = autotune_args.get_benchmark_tensors(True).unpack()
        call, values = choice._compiled_module.call, list(choice.sym_input_values)
        return (lambda: call([*values, *inputs])), lambda: None
    inputs, out = autotune_args.get_benchmark_tensors(False).unpack()
    run = choice.bmreq.make_run_fn(*inputs, out=out)
    return run, getattr(choice.bmreq, "cleanup_run_fn", lambda: None)


def compile_in_workers(choice: Any) -> Any:
    """Start compiling a Triton template choice for a CUDA device in Inductor's compile worker
    processes, as Inductor's own precompilation does: the future of that compile (the kernel
    then lands in Triton's cache, where the choice's own ``precompile`` finds it), or None where
    the workers are not ready (``compile_threads`` 1, still starting) or the choice is of another
    kind (ATen, decompose-k, a CPU Triton template).

    torch 2.11 and 2.13 alike: ``AsyncCompile.use_process_pool()``, then
    ``AsyncCompile().triton(kernel_name=bmreq.kernel_name, source_code=<bmreq.module_path's
    text>).future`` for a ``TritonTemplateCaller`` whose ``bmreq`` is a
    ``TritonGPUBenchmarkRequest`` (``select_algorithm``'s ``make_precompile_fn``).
    """
    from torch._inductor.async_compile import AsyncCompile
    from torch._inductor.autotune_process import TritonGPUBenchmarkRequest
    from torch._inductor.select_algorithm import TritonTemplateCaller

    if not isinstance(choice, TritonTemplateCaller) or not isinstance(choice.bmreq, TritonGPUBenchmarkRequest):
        return None
    if not AsyncCompile.use_process_pool():
        return None
    with open(choice.bmreq.module_path) as module:
        source = module.read()
    return getattr(AsyncCompile().triton(kernel_name=choice.bmreq.kernel_name, source_code=source), "future", None)


def compile_workers_ready(timeout_s: float) -> int:
    """Start Inductor's compile worker processes and wait, at most ``timeout_s``, until they take
    jobs: how many there are, or 0 where Inductor compiles in this process (``compile_threads``
    1, a daemonic process, workers not ready in time).

    torch 2.11 and 2.13 alike: ``get_compile_threads()`` (else ``config.compile_threads``),
    ``AsyncCompile.warm_pool()``, ``AsyncCompile.wait_pool_ready(timeout)`` and
    ``AsyncCompile.use_process_pool()``, the readiness Inductor checks before it hands a kernel
    to the workers.
    """
    import concurrent.futures

    from torch._inductor import async_compile, config

    threads_of = getattr(async_compile, "get_compile_threads", None)
    threads = threads_of() if threads_of is not None else (config.compile_threads or 1)
    if threads <= 1:
        return 0
    pool = async_compile.AsyncCompile
    pool.warm_pool()
    try:
        pool.wait_pool_ready(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        return 0
    return threads if pool.use_process_pool() else 0


def runs_as_cuda_graph() -> bool:
    """Whether the graph being compiled will run as CUDA-graph replays: Inductor's
    ``triton.cudagraphs``, which ``mode="max-autotune"`` turns on and
    ``mode="max-autotune-no-cudagraphs"`` or ``options={"max_autotune": True}`` leave off (a
    graph Inductor cannot capture runs without them all the same).

    torch 2.11 and 2.13 alike: ``torch._inductor.config.triton.cudagraphs``, patched for the
    compile by ``torch.compile``'s mode and options.
    """
    from torch._inductor import config

    return bool(config.triton.cudagraphs)


def selection_deferred(arguments: dict[str, Any]) -> bool:
    """Whether Inductor's autotuner, called with ``arguments`` (``AlgorithmSelectorCache.__call__``'s,
    bound by name) and several choices, returns a ``MultiTemplateBuffer``: the choice is then made
    when the scheduler asks for the choices' timings, after the whole graph is lowered. Pipelined
    autotuning (its own subprocess timings) and ``multi_kernel_hints`` (one timing per hint) are
    left out: DIODE measures those at lowering.

    torch 2.11 and 2.13 alike: ``return_multi_template`` (``benchmark_epilogue_fusion`` by
    default) and ``max_autotune`` or ``max_autotune_gemm``, no ``input_gen_fns``, and not a CPU
    layout unless ``cpu_backend`` is ``"triton"``; not ``config.deterministic``.
    """
    from torch._inductor import config

    layout = arguments["layout"]
    return bool(
        arguments.get("return_multi_template", False)
        and (config.max_autotune or config.max_autotune_gemm)
        and arguments.get("input_gen_fns") is None
        and not (layout.device.type == "cpu" and config.cpu_backend != "triton")
        and not config.deterministic
        and not getattr(config, "pipeline_max_autotune_gemm", False)
        and not config.multi_kernel_hints
    )


def defer_timings(result: Any, timings: Callable[[int | None, Callable[[int | None], dict]], dict]) -> bool:
    """Have the ``MultiTemplateBuffer`` of an autotuner call's ``result`` take its choices'
    timings from ``timings(hint_override, inductor_timings)``, which may call Inductor's own
    ``inductor_timings(hint_override)``; False (nothing changed) when ``result`` holds none.

    The scheduler asks a buffer for its timings (``choice_timings``, milliseconds by choice) when
    it weighs an epilogue fusion and when it finalizes the buffer; the fastest is kept.
    torch 2.13: ``__call__`` returns ``(TensorBox, None)``; torch 2.11: the ``TensorBox`` (without
    ``return_choice``). Its ``StorageBox`` holds the ``MultiTemplateBuffer``, whose
    ``_choice_timings_fn(hint_override)`` ``choice_timings`` calls once per hint, both versions.
    """
    from torch._inductor.ir import MultiTemplateBuffer

    box = result[0] if isinstance(result, tuple) else result
    buffer = getattr(getattr(box, "data", None), "data", None)
    if not isinstance(buffer, MultiTemplateBuffer) or not callable(getattr(buffer, "_choice_timings_fn", None)):
        return False
    inductor_timings = buffer._choice_timings_fn
    buffer._choice_timings_fn = lambda hint_override=None: timings(hint_override, inductor_timings)
    return True


def is_extern(choice: Any) -> bool:
    """An ATen choice (``ExternKernelCaller``), torch 2.11 and 2.13 alike."""
    from torch._inductor.select_algorithm import ExternKernelCaller

    return isinstance(choice, ExternKernelCaller)


def use_workers_ptxas() -> None:
    """Point Triton at the ptxas Inductor's compile workers use, as Inductor itself does just
    before it compiles a Triton kernel, but before this process first hashes its Triton backend.

    Triton keys its kernel cache by the ptxas version (``CUDABackend.hash``), read once per
    process, and Inductor writes that hash into every kernel's module (``backend_hash``). Every
    graph Inductor compiles hashes it (``graph.py`` reads ``inductor_meta_from_config`` after its
    code is generated, a GEMM left to ATen included), while Inductor sets ``TRITON_PTXAS_PATH``
    (torch's own ptxas, where torch ships one) only when this process first compiles a Triton
    kernel: a process whose first graph compiled no Triton kernel keys its kernels by Triton's
    bundled ptxas, one that started with a Triton kernel by torch's, so a later process misses
    every kernel the other kind compiled and a warm DIODE compile compiles its stored winner
    again. Called when ``torch._inductor.graph`` is imported, before any graph is lowered; a
    no-op once the path is set (the user's own included) or where torch has no ptxas. Triton
    kernels compiled by the user's own code in this process afterwards use torch's ptxas too, as
    they would after Inductor's first Triton compile.

    torch 2.11 and 2.13 alike: ``torch._inductor.runtime.compile_tasks._set_triton_ptxas_path``
    (cached; what ``AsyncCompile.triton`` and the compile workers call).
    """
    from torch._inductor.runtime import compile_tasks

    setter = getattr(compile_tasks, "_set_triton_ptxas_path", None)
    if setter is not None:
        setter()


def current_lowering() -> tuple[Any, Any] | None:
    """Weak references to the graph being lowered and to the FX node it lowers now: what
    identifies one op's lowering, whose template groups reach ``get_template_configs`` in
    several calls (addmm: the ATen group, then the contiguous and Triton ones). None outside a
    lowering, or where a reference cannot be taken.

    torch 2.11 and 2.13 alike: ``V.graph`` is the ``GraphLowering``; ``run_node`` sets its
    ``current_node`` before it calls the op's lowering.
    """
    import weakref

    from torch._inductor.virtualized import V

    try:
        graph = V.graph
        node = graph.current_node
        return (weakref.ref(graph), weakref.ref(node)) if node is not None else None
    except Exception:  # no graph handler (a NullHandler raises), or no weak reference support
        return None


def broadcast_bias_view(kernel_inputs: Any, op_name: str) -> Any | None:
    """``kernel_inputs`` of a template group with :func:`broadcast_bias_nodes`' view of the
    bias; None where there is nothing to change.

    torch 2.11 and 2.13 alike: ``KernelInputs`` keeps its nodes in ``_input_nodes``.
    """
    import copy

    nodes = broadcast_bias_nodes(kernel_inputs.nodes(), op_name)
    if nodes is None:
        return None
    viewed = copy.copy(kernel_inputs)
    viewed._input_nodes = nodes
    return viewed


def broadcast_bias_nodes(nodes: list[Any], op_name: str) -> list[Any] | None:
    """``nodes`` of an addmm or baddbmm lowering (``mm_args``' order: the bias, then the two
    matrices) whose bias Inductor copied to the output's shape, with the op's own bias viewed at
    that shape instead (every stride 0); None where there is nothing to change.

    ``mm_args`` expands the bias to the output's shape and realizes it: a view with stride 0
    along the broadcast dimensions, except for a bias of one element (N = 1), which it copies
    with a pointwise kernel. A group that takes the expanded bias (the Triton ones; on torch 2.11
    under max-autotune the ATen one too) then runs that kernel before the GEMM, and DIODE would
    describe the bias as a full matrix; so does a selection deferred to the scheduler, whose
    buffer lists the autotuner call's inputs. The view is what the collector times
    (``bias.expand``) and what Inductor makes of every other bias. A bias is viewed where it is
    stored (a computed one is stored before it is expanded); one not in a buffer keeps its copy.

    torch 2.11 and 2.13 alike: ``V.graph.current_node`` is the op's FX node and ``V.graph.env``
    holds the lowered value of its bias argument.
    """
    import torch
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    if op_name not in ("addmm", "baddbmm") or len(nodes) != 3:
        return None
    graph = V.graph
    node = getattr(graph, "current_node", None)  # outside a lowering, V.graph is a NullHandler
    if node is None or node.target not in (torch.ops.aten.addmm.default, torch.ops.aten.baddbmm.default):
        return None
    source = graph.env.get(node.args[0])
    if source is None or not ir.is_storage_and_layout(source):
        return None
    bias, *matrices = nodes
    sizes = graph.sizevars
    if bias.get_name() == source.get_name() or not all(sizes.statically_known_equals(s, 1) for s in source.get_size()):
        return None
    storage, layout = ir.as_storage_and_layout(source)
    size = list(bias.get_size())
    view = ir.ReinterpretView(
        data=storage,
        layout=ir.FixedLayout(device=layout.device, dtype=layout.dtype, size=size, stride=[0] * len(size), offset=layout.offset),
    )
    return [view, *matrices]


@contextlib.contextmanager
def configs_narrowed(
    template: str, device_type: str, op: str, keep: Callable[[Any], bool], keep_final: Callable[[Any], bool] | None = None
) -> Iterator[None]:
    """While inside, the heuristic of ``template`` for ``op`` on ``device_type`` generates only the
    configs ``keep`` accepts, taken from its list after its own filtering and before they are
    scaled to the shape (``BaseConfigHeuristic.preprocess_mm_configs`` calls ``_filter_configs``
    first, then scales only block sizes, prunes and deduplicates config by config). A heuristic
    that never calls ``_filter_configs`` generates as before. With ``keep_final``, of the
    finished configs (each a ``triton.Config`` that ``_finalize_mm_configs`` yields after
    scaling, pruning and deduplication, before the heuristic turns it into template kwargs) only
    those ``keep_final`` accepts go on, in their order: the configs it drops never become
    template kwargs, and which configs come out of deduplication does not change.

    torch 2.11 and 2.13 alike: ``get_template_heuristic`` returns one cached instance per
    (template, device type, op), whose ``_filter_configs`` and ``_finalize_mm_configs`` instance
    attributes shadow; ``preprocess_mm_configs`` returns ``self._finalize_mm_configs(scaled)``,
    a generator of ``triton.Config`` (``kwargs``, ``num_stages``, ``num_warps``).
    """
    from torch._inductor.template_heuristics.registry import get_template_heuristic

    heuristic = get_template_heuristic(template, device_type, op)
    own = heuristic._filter_configs
    heuristic._filter_configs = lambda configs: [c for c in own(configs) if keep(c)]
    if keep_final is not None:
        finalize = heuristic._finalize_mm_configs
        heuristic._finalize_mm_configs = lambda configs: (c for c in finalize(configs) if keep_final(c))
    try:
        yield
    finally:
        del heuristic._filter_configs
        if keep_final is not None:
            del heuristic._finalize_mm_configs


class UnloadedModule(types.ModuleType):
    """A Triton template choice's module that ``PyCodeCache`` wrote but did not execute: its
    ``__file__`` and ``key`` are what ``PyCodeCache.load`` gives; any other attribute loads the
    module first (``PyCodeCache.load_by_key_path``, as its benchmark request does)."""

    def __init__(self, key: str, path: str, load: Callable[[], ModuleType]) -> None:
        super().__init__(f"diode_unloaded.{key}")
        self.__file__ = path
        self.key = key
        self._load = load

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self._load(), name)


#: Inside a :func:`template_loads_scope`: None while template modules load as Inductor loads
#: them; after :func:`leave_template_modules_unloaded`, what to call when one cannot be left
#: unloaded (it is then loaded as usual)
_unloaded_modules: ContextVar[Callable[[BaseException], None] | None] = ContextVar(
    "diode_unloaded_template_modules", default=None
)


def install_unloaded_template_modules(select_algorithm: ModuleType) -> None:
    """Make :func:`leave_template_modules_unloaded` possible (idempotent): Inductor then writes
    a Triton template choice's module to its cache without executing it, for a choice that
    will never be benchmarked (handed to Inductor alone). Every later use of the module loads it
    from that file as before: the benchmark request's ``precompile`` and ``make_run_fn``, and
    any other attribute of :class:`UnloadedModule`. The kernel Inductor compiles in the end is
    rendered anew from the choice's ``make_kernel_render``, never from this module.

    torch 2.11 and 2.13 alike: ``TritonTemplate.generate_and_load`` renders the choice into a
    module and calls ``PyCodeCache.load(code, extra)`` (2.13 adds ``set_sys_modules=False``),
    which writes it (``PyCodeCache.write(code, extra)``: the same key and path) and executes
    it; ``TritonTemplate.generate`` reads only the module's ``__file__`` and ``key``, for its
    ``TritonBenchmarkRequest`` (``module_path``, ``module_cache_key``), which loads it again by
    them (``PyCodeCache.load_by_key_path``). The name ``PyCodeCache`` in ``select_algorithm``
    (its only ``load`` call is ``generate_and_load``'s) becomes a subclass whose ``load`` is
    Inductor's outside :func:`leave_template_modules_unloaded`.
    """
    base = select_algorithm.PyCodeCache
    if getattr(base, "_diode_unloaded_modules", False):
        return

    class PyCodeCacheLeavingUnloaded(base):
        _diode_unloaded_modules = True

        @classmethod
        def load(cls, source_code: str, extra: str = "", **kwargs: Any) -> ModuleType:
            on_failure = _unloaded_modules.get()
            if on_failure is not None:
                try:
                    key, path = base.write(source_code, extra)
                    return UnloadedModule(key, path, lambda: base.load_by_key_path(key, path))
                except Exception as err:
                    on_failure(err)  # counted and logged once (raised under diode_strict)
            return base.load(source_code, extra, **kwargs)

    select_algorithm.PyCodeCache = PyCodeCacheLeavingUnloaded


@contextlib.contextmanager
def template_loads_scope() -> Iterator[None]:
    """Inside, Triton template modules load as Inductor loads them until
    :func:`leave_template_modules_unloaded` is called; after it, to the scope's end, they are
    written but not executed. Scopes are per thread (a ContextVar)."""
    token = _unloaded_modules.set(None)
    try:
        yield
    finally:
        _unloaded_modules.reset(token)


def leave_template_modules_unloaded(on_failure: Callable[[BaseException], None]) -> None:
    """To the end of the current :func:`template_loads_scope`, Triton template choices are
    generated with their module written but not executed (where
    :func:`install_unloaded_template_modules` ran); ``on_failure`` gets any error that makes
    one load as usual instead."""
    _unloaded_modules.set(on_failure)
