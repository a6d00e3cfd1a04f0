"""The decision policy: rank a scorer's candidates and decide which go on to Inductor. Pure: no
Inductor, no cache, no files."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .options import DiodeOptions
from .problem import KIND_ATEN, KIND_TRITON, GemmProblem, HardwareInfo, KernelConfig
from .scorer import GemmScorer, Prediction, checked_prediction


@dataclass(frozen=True)
class Ranking:
    """Candidates of one problem ordered by predicted time.

    ``order`` holds scored indices, fastest first; ``unscored`` those the scorer had no
    prediction for; ``confidence`` is the scorer's probability that ``order[0]`` is within 5% of
    the fastest (None: unknown); ``from_cache``: read from the prediction cache, not computed.
    """

    order: tuple[int, ...]
    unscored: tuple[int, ...]
    times_us: tuple[float, ...]
    confidence: float | None
    from_cache: bool = field(default=False, compare=False)  # where it came from, not what it says

    @classmethod
    def of(cls, prediction: Prediction) -> Ranking:
        order, unscored = prediction.split()
        return cls(tuple(order), tuple(unscored), prediction.times_us, prediction.confidence, prediction.from_cache)


def rank_candidates(
    scorer: GemmScorer,
    problem: GemmProblem,
    configs: Sequence[KernelConfig],
    hardware: HardwareInfo,
) -> Ranking:
    """Ask ``scorer`` for runtimes and order the candidates; infinite times (cannot launch) are
    ranked last but stay scored.

    :raises ValueError: naming the scorer, when its answer is not one it may give
        (:func:`~diode_backend.scorer.checked_prediction`).
    """
    return Ranking.of(checked_prediction(scorer, scorer.predict(problem, configs, hardware), len(configs)))


@dataclass(frozen=True)
class Selection:
    """Which candidate indices Inductor gets, and why.

    ``fallback`` names the reason when DIODE did not make a confident single pick although
    ``fast_autotune`` asked for one (see :data:`diode_backend.counters.FALLBACK_REASONS`).
    """

    keep: tuple[int, ...]
    fallback: str | None = None


def select_candidates(
    ranking: Ranking,
    options: DiodeOptions,
    kinds: Sequence[str],
    compile_estimates: Callable[[], Sequence[float | None]] | None = None,
) -> Selection:
    """Apply the options to a ranking of candidates of the given ``kinds`` (see
    :func:`measured_set`). ``compile_estimates`` gives the candidates' estimated compile seconds,
    called only when DIODE measures (a pick kept alone needs none).

    - no scored candidate: keep everything (nothing to guess with);
    - ``fast_autotune`` and confidence >= threshold, or ``diode_fallback_to_autotune=False``:
      keep the single best;
    - otherwise: keep :func:`measured_set`, for DIODE to measure.

    The model's uncertainty enters here, once: its calibrated confidence decides between the
    single pick and measuring. How many are measured then follows the predicted times alone
    (the scorer contract, :class:`~diode_backend.scorer.Prediction`, carries no per-candidate
    spread to widen the ratio by).
    """
    everything = tuple(sorted(ranking.order + ranking.unscored))
    if not ranking.order:
        return Selection(everything, "no_scored_candidates")
    if keeps_alone(ranking.confidence, options):
        return Selection((ranking.order[0],))
    compile_s = compile_estimates() if compile_estimates is not None else None
    return Selection(measured_set(ranking, kinds, options, compile_s), "low_confidence" if options.fast_autotune else None)


def keeps_alone(confidence: float | None, options: DiodeOptions) -> bool:
    """Whether the options keep a predicted best of this ``confidence`` alone, unmeasured:
    ``fast_autotune`` and the confidence reaches ``diode_confidence_threshold``, or
    ``diode_fallback_to_autotune=False`` (the best guess whatever the confidence). Also decides
    whether a stored predicted decision (:mod:`diode_backend.predicted`) still answers."""
    confident = confidence is not None and confidence >= options.diode_confidence_threshold
    return options.fast_autotune and (confident or not options.diode_fallback_to_autotune)


def measured_set(
    ranking: Ranking, kinds: Sequence[str], options: DiodeOptions, compile_s: Sequence[float | None] | None = None
) -> tuple[int, ...]:
    """The candidates worth measuring, as indices into the ranked candidate list: a stable
    contract (offline simulations of the policy call it with recorded rankings).

    ``kinds[i]`` is candidate ``i``'s :attr:`~diode_backend.problem.KernelConfig.kind`
    (``"aten"``, ``"triton"``, or another template's name); ``compile_s[i]`` its estimated
    compile seconds (:mod:`diode_backend.compile_estimate`; None, or no ``compile_s``: unknown).
    The scored candidates estimated above ``diode_max_compile_s`` are left out, unless every
    scored one is: the graph waits for the slowest compile of the set, and a tile that takes
    seconds to compile seldom runs much faster than the best of the rest. Of the others, the
    set, in this order:

    1. those whose predicted time is within ``diode_measure_ratio`` times the best of them
       (at least that best), fastest predicted first, at most ``diode_top_k`` of them;
    2. every ``aten`` candidate and the predicted-best ``triton`` candidate, when not among them
       (the model may misjudge a whole kind, or one cuBLAS call against another, such as addmm
       against bias_addmm; the ATen calls are a handful and none needs compiling);
    3. the unscored candidates, in input order (the model knows nothing of them).
    """
    times = ranking.times_us
    estimated = compile_s or [None] * len(times)
    bound = options.diode_max_compile_s
    order = [i for i in ranking.order if estimated[i] is None or estimated[i] <= bound] or ranking.order
    if not order:
        return ranking.unscored
    limit = options.diode_measure_ratio * times[order[0]]
    within = [i for i in order if times[i] <= limit][: options.diode_top_k] or [order[0]]
    within += [i for i in order if kinds[i] == KIND_ATEN and i not in within]
    best_triton = next((i for i in order if kinds[i] == KIND_TRITON), None)
    if best_triton is not None and best_triton not in within:
        within.append(best_triton)
    return tuple(within) + ranking.unscored


def combined_confidence(
    group_confidence: float | None, union_confidence: float | None
) -> float | None:
    """Confidence of a pick made in two steps (best within its group, then best of the group
    winners), assuming the steps err independently."""
    if group_confidence is None or union_confidence is None:
        return None
    return group_confidence * union_confidence
