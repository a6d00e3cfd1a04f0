"""``DiodeChoices``: Inductor's ``InductorChoices`` with DIODE ranking in its GEMM seam.

Built by :class:`~diode_backend.inductor.factory.ChoicesFactory`, the default of
``config.inductor_choices_class``.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any

from torch._inductor import config
from torch._inductor.choices import InductorChoices

from .. import __version__, catalog, counters, registry
from ..options import DiodeOptionError
from ..problem import KIND_TRITON
from .context import GemmContext, contained, diode_requested, entry_identity, resolve_context
from . import compat
from .group_configs import MARK, CandidateMark, DecidedMark, WinnerSearch, keep_group_configs

_context: ContextVar[GemmContext | None] = ContextVar("diode_gemm_context", default=None)
#: the lowering (graph, FX node, op) whose decided kernel (a stored decision's winner) a template
#: group has already offered
_answered: ContextVar[tuple | None] = ContextVar("diode_decided_lowering", default=None)


class DiodeChoicesMixin:
    """The DIODE behaviour, to be mixed in front of any ``InductorChoices`` subclass."""

    def uuid(self) -> str:
        """Part of Inductor's compile cache key: DIODE's version, the scorer that would rank on
        the current device, and the composed class's own uuid."""
        parent = getattr(super(), "uuid", None)
        own = f"diode-{__version__}:{model_identity()}"
        return f"{own}|{parent()}" if callable(parent) else own

    def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
        templates = list(templates)
        requested = bool(templates) and diode_requested()  # an empty group has nothing to rank
        if requested:  # a one-element bias seen as the broadcast it is, not copied (compat)
            viewed = contained(lambda: compat.broadcast_bias_view(kernel_inputs, op_name), "ranking")
            kernel_inputs = viewed if viewed is not None else kernel_inputs
        lowering = _lowering(op_name) if requested else None
        if lowering is not None and _answered.get() == lowering:
            return []  # this op's decided kernel came in an earlier group: step 2 hands it over alone
        context = contained(lambda: resolve_context(kernel_inputs, op_name), "ranking") if requested else None
        token = _context.set(context)
        try:
            with _search_space(context):
                templates = decided_templates(templates, context)
                with _winner_configs_only(context, templates, kernel_inputs, op_name, kwarg_overrides) as narrowed:
                    with compat.template_loads_scope():  # step 1 may leave a lone choice's module unloaded
                        choices = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
                if narrowed and not _holds_decided_kernel(choices):
                    # the winner is not among today's configs: the group is ranked on all of them
                    with compat.template_loads_scope():
                        choices = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
        finally:
            _context.reset(token)
        if lowering is not None and context is not None and context.decision is not None:
            if _holds_decided_kernel(choices):
                _answered.set(lowering)
        return choices

    def _finalize_template_configs(
        self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None
    ):
        context = _context.get()
        search = WinnerSearch.of(context, template_choices)
        if search is not None:  # a stored decision's group: generated up to its winner only
            template_choices = search.generators(template_choices)
        ktcs = super()._finalize_template_configs(
            template_choices, kernel_inputs, templates, op_name, kwarg_overrides
        )
        if context is None:
            return ktcs
        kept = contained(lambda: keep_group_configs(ktcs, context, search), "ranking", fallback=ktcs)
        if _alone(kept):
            # never benchmarked: Inductor writes its module without loading it (compat)
            compat.leave_template_modules_unloaded(_module_left_unloaded_failed)
        return kept


class DiodeChoices(DiodeChoicesMixin, InductorChoices):
    """Inductor's default heuristics plus DIODE's GEMM ranking."""


def model_identity() -> str:
    """Identity of what DIODE would rank with now ('inactive' when DIODE is not requested)."""
    if not diode_requested():
        return "inactive"
    try:
        from .options import current_options

        options = current_options()
        hardware = registry.detect_hardware(catalog.default_device())
        entry = catalog.pick_entry(hardware, options.diode_model) if hardware else None
        if entry is None:
            return "none"
        return f"{entry.name}:{entry_identity(entry)}"
    except (DiodeOptionError, KeyboardInterrupt):
        raise
    except BaseException as err:  # never let the cache key computation fail (or exit) a compile
        counters.record_error("model_identity", err)
        return "unknown"


def decided_templates(templates: list[Any], context: GemmContext | None) -> list[Any]:
    """A GEMM with a stored decision (DIODE measured it, or kept a prediction alone, before)
    needs only its winner's template (generated only up to the winner: :class:`WinnerSearch`):
    the other templates' configs would be generated and ranked only to be dropped. All of them
    when none matches: the winner may be in a later group of the op (addmm asks for its ATen,
    contiguous and Triton groups apart), or Inductor offers other templates than when the
    decision was made. Groups after the one that offered the winner are not asked for at all
    (``get_template_configs``)."""
    decision = context.decision if context is not None else None
    if decision is None:
        return templates
    return [t for t in templates if getattr(t, "uid", None) == decision.winner.template] or templates


@contextlib.contextmanager
def _winner_configs_only(
    context: GemmContext | None, templates: list[Any], kernel_inputs: Any, op_name: str, kwarg_overrides: Any = None
):
    """For a stored decision whose winner is a tile of one of ``templates``: that template's
    heuristic scales only the configs that could become the winner
    (:meth:`WinnerSearch.could_become_winner`), and of the plain GEMM templates' finished configs
    only the winner's own (:meth:`WinnerSearch.is_winner`) becomes template kwargs, so the walk up
    to the winner converts one config instead of every one before it. Not where the lowering
    overrides that template's kwargs (the configs it names are not the ones generated). Yields
    whether it narrowed."""
    decision = context.decision if context is not None else None
    offered = decision is not None and decision.winner.template in {getattr(t, "uid", None) for t in templates}
    if not offered or not decision.winner.block_m or (kwarg_overrides or {}).get(decision.winner.template):
        yield False
        return
    search = WinnerSearch(decision.winner)
    # the plain templates' heuristics turn a finished config into kwargs without changing its
    # tile, stages or warps; other templates' may (TMA), so they keep every finished config
    is_winner = search.is_winner if decision.winner.kind == KIND_TRITON else None
    with contextlib.ExitStack() as stack:
        narrowed = contained(
            lambda: stack.enter_context(
                compat.configs_narrowed(
                    decision.winner.template, kernel_inputs.device_type, op_name, search.could_become_winner, is_winner
                )
            )
            or True,
            "ranking",
            fallback=False,
        )
        yield narrowed


def _alone(kept: list[Any]) -> bool:
    """Whether step 1 kept one choice of a group DIODE ranked or decided before: Inductor gets it
    alone (or DIODE measures it with other groups' picks, loading its module then)."""
    return len(kept) == 1 and isinstance(getattr(kept[0], "annotations", {}).get(MARK), (DecidedMark, CandidateMark))


def _module_left_unloaded_failed(err: BaseException) -> None:
    """A lone choice's module could not be left unloaded: counted and logged once (raised under
    ``diode_strict``); Inductor loads it as usual."""

    def fail() -> None:
        raise err

    contained(fail, "unloaded_module")


def _lowering(op_name: str) -> tuple | None:
    """This op's lowering (:func:`compat.current_lowering` and the op), None where unknown."""
    lowering = compat.current_lowering()
    return None if lowering is None else (*lowering, op_name)


def _holds_decided_kernel(choices: list[Any]) -> bool:
    """Whether step 1 kept a group's decided kernel (a :class:`DecidedMark`) among ``choices``."""
    return any(isinstance(getattr(c, "annotations", {}).get(MARK), DecidedMark) for c in choices)


@contextlib.contextmanager
def _search_space(context: GemmContext | None):
    """With DIODE alone and a scorer to rank with, generate the whole Triton config space."""
    if context is None or context.scorer is None or not context.diode_alone:
        yield
        return
    with config.patch(max_autotune_gemm_search_space=context.options.diode_search_space):
        yield
