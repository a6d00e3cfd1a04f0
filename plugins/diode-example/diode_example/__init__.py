"""An example diode-backend plugin (see docs/plugins.md, which walks through this file).

It contributes one scorer, ``example-bias-epilogue``, picked only by name
(``diode_model="example-bias-epilogue"``, any device, CPUs too). It predicts that kernels fusing the bias in their epilogue (ATen's ``bias_addmm``) win and
that, among Triton configs, the smallest tiles win. It is a toy: its job is to show the hooks
and to prove in tests that a plugin's scorer changes what Inductor compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from diode_backend import hookimpl
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.scorer import Prediction, ScorerEntry


class BiasEpilogueScorer:
    name = "example-bias-epilogue"
    identity = "example-bias-epilogue-v1"

    def predict(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> Prediction:
        times = []
        for config in configs:
            if config.template.endswith("bias_addmm"):
                times.append(1.0)
            elif config.block_m:
                times.append(10.0 + config.block_m * config.block_n * config.block_k / 1e4)
            else:
                times.append(5.0)
        # A toy that is always sure of itself, so that fast_autotune keeps one candidate.
        return Prediction(times_us=tuple(times), confidence=1.0)


@hookimpl
def diode_register_scorers(register: Callable[[ScorerEntry], None]) -> None:
    register(
        ScorerEntry(
            name="example-bias-epilogue",
            load=BiasEpilogueScorer,
            applies_to=lambda hardware: False,  # never picked automatically: only by name
            description="example plugin: prefers bias-epilogue kernels, then small tiles",
            identity=BiasEpilogueScorer.identity,
        )
    )
