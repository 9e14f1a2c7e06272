"""Serving compiled models with Ray Serve (docs/serving.md).

    from ray import serve
    import lamina.serve
    serve.run(lamina.serve.deployment("model.lamina", num_replicas=2))

`deployment` needs Ray Serve (`pip install 'lamina[serve]'`); it is imported
on first use, so `lamina.serve.BadRequest` and the request formats are
available without it.
"""

from typing import TYPE_CHECKING, Any

from lamina.serve.requests import BadRequest

if TYPE_CHECKING:  # imported on first use: it imports Ray
    from lamina.serve.replica import LaminaModel, deployment


def __getattr__(name: str) -> Any:
    if name in ("deployment", "LaminaModel"):
        try:
            from lamina.serve import replica
        except ModuleNotFoundError as err:
            if err.name is None or err.name.split(".")[0] not in ("ray", "starlette"):
                raise
            raise ModuleNotFoundError(
                f"lamina.serve.{name} needs Ray Serve: pip install 'lamina[serve]' ({err})"
            ) from err
        return getattr(replica, name)
    raise AttributeError(f"module 'lamina.serve' has no attribute {name!r}")


__all__ = ["BadRequest", "deployment", "LaminaModel"]
