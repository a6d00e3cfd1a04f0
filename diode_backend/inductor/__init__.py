"""The only package that touches ``torch._inductor`` internals.

:func:`install` arranges, through post-import hooks, that as each Inductor module is imported
DIODE adds itself: options into ``config`` (plus ``DiodeChoices`` as the default choices
class), the DIODE backend name into ``utils``' backend check, the final selection step into
``select_algorithm``, and, before ``graph`` can lower anything, Triton pointed at the ptxas of
Inductor's compile workers; ``torch.compile(options=...)`` checks the diode options as soon as
``torch`` itself is there. Nothing here is imported by ``import torch`` itself.
"""

from __future__ import annotations

_installed = False


def install() -> None:
    """Register the post-import hooks (idempotent). Hooks run at once for modules already
    imported."""
    global _installed
    if _installed:
        return
    from wrapt import register_post_import_hook

    register_post_import_hook(_on_torch, "torch")  # at once inside `import torch`
    register_post_import_hook(_on_config, "torch._inductor.config")
    register_post_import_hook(_on_utils, "torch._inductor.utils")
    register_post_import_hook(_on_select_algorithm, "torch._inductor.select_algorithm")
    register_post_import_hook(_on_select_algorithm_modules, "torch._inductor.select_algorithm")
    register_post_import_hook(_on_graph, "torch._inductor.graph")
    _installed = True


def _never_raise(hook):
    """A failing post-import hook would break importing Inductor: count and log instead."""

    def guarded(module) -> None:
        try:
            hook(module)
        except Exception as err:
            from ..counters import record_error

            record_error(f"install:{module.__name__}", err)

    return guarded


@_never_raise
def _on_torch(torch) -> None:
    from .options import patch_compile_options

    patch_compile_options(torch)


@_never_raise
def _on_config(config) -> None:
    from .factory import ChoicesFactory
    from .options import inject_options

    inject_options(config)
    entry = config._config["inductor_choices_class"]
    if entry.default is None:
        entry.default = ChoicesFactory()


@_never_raise
def _on_utils(utils) -> None:
    from .backends import patch_backend_check

    patch_backend_check(utils)


@_never_raise
def _on_select_algorithm(select_algorithm) -> None:
    from .benchmarked_choices import patch_autotuner

    patch_autotuner(select_algorithm)


@_never_raise
def _on_select_algorithm_modules(select_algorithm) -> None:
    from .compat import install_unloaded_template_modules

    install_unloaded_template_modules(select_algorithm)


@_never_raise
def _on_graph(graph) -> None:
    from .compat import use_workers_ptxas

    use_workers_ptxas()
