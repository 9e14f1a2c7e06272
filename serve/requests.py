"""Requests to a served model: decoding JSON, checking arrays, encoding answers.

A request is one set of named input arrays that carry the batch dimension
(`{"x": array of shape (rows, 16)}` for an input `x` of shape `[N, 16]` or
`[4, 16]`). This module decides whether a request fits the model, before it
joins a batch: a bad request is answered alone (HTTP 400, `BadRequest` to a
handle) and never fails the other requests of its batch.

Nothing here imports Ray: the checks are plain functions on NumPy arrays,
tested without a cluster (docs/serving.md describes the formats).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from lamina.runtime.executable import TensorInfo


class BadRequest(ValueError):
    """A request the model cannot answer: its message says what to fix (HTTP 400)."""


@dataclass(frozen=True)
class Port:
    """One input or output of the model: name, dtype, shape (a `str` is a symbolic dimension)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | str, ...]

    def describe(self) -> str:
        dims = ", ".join(map(str, self.shape))
        return f"'{self.name}' {self.dtype}[{dims}]"


def port_of(entry: TensorInfo) -> Port:
    """A `Port` from a loaded model's `get_inputs()`/`get_outputs()` entry."""
    shape = tuple(d if isinstance(d, str) else int(d) for d in entry.shape)
    return Port(entry.name, np.dtype(entry.dtype), shape)


Bounds = Mapping[str, tuple[int, int]]
"""Symbolic dimension → (smallest, largest) size the code accepts."""


def check_request(
    arrays: Mapping[str, object],
    inputs: tuple[Port, ...],
    bounds: Bounds,
    batched: bool,
) -> dict[str, np.ndarray]:
    """`arrays` checked against the model's inputs, in the model's order.

    With `batched`, the leading dimension is the request's row count: any
    count ≥ 1, the same for every input (the batcher pads or splits it to fit
    the code). Every other dimension must equal the compiled size, or lie in
    its symbol's bounds. Without, shapes must be exactly the compiled ones.
    """
    known = [p.name for p in inputs]
    unknown = [name for name in arrays if name not in known]
    if unknown:
        raise BadRequest(f"unknown input '{unknown[0]}' (the model's inputs: {', '.join(known)})")
    missing = [name for name in known if name not in arrays]
    if missing:
        raise BadRequest(f"missing input '{missing[0]}' (the model's inputs: {', '.join(known)})")
    checked = {p.name: _check_array(arrays[p.name], p, bounds, batched) for p in inputs}
    if batched:
        rows = {name: arr.shape[0] for name, arr in checked.items()}
        if len(set(rows.values())) > 1:
            listed = ", ".join(f"'{n}' {r}" for n, r in rows.items())
            raise BadRequest(f"inputs have different batch sizes (rows: {listed})")
    return checked


def _check_array(value: object, port: Port, bounds: Bounds, batched: bool) -> np.ndarray:
    if not isinstance(value, np.ndarray | np.generic):
        raise BadRequest(
            f"input {port.describe()}: expected a numpy array, got {type(value).__name__}"
        )
    arr = np.asarray(value)
    if arr.dtype != port.dtype:
        raise BadRequest(f"input {port.describe()}: expected dtype {port.dtype}, got {arr.dtype}")
    if arr.ndim != len(port.shape):
        raise BadRequest(
            f"input {port.describe()}: expected {len(port.shape)} dimensions, "
            f"got shape {list(arr.shape)}"
        )
    for axis, (got, want) in enumerate(zip(arr.shape, port.shape, strict=True)):
        if batched and axis == 0:
            if got < 1:
                raise BadRequest(f"input {port.describe()}: a request needs at least one row")
            continue
        if not _fits(got, want, bounds):
            raise BadRequest(
                f"input {port.describe()}: dimension {axis} is {got}, "
                f"expected {_expected(want, bounds)} (got shape {list(arr.shape)})"
            )
    return np.ascontiguousarray(arr)


def _fits(size: int, dim: int | str, bounds: Bounds) -> bool:
    if isinstance(dim, int):
        return size == dim
    low, high = bounds.get(dim, (1, None))
    return low <= size and (high is None or size <= high)


def _expected(dim: int | str, bounds: Bounds) -> str:
    if isinstance(dim, int):
        return str(dim)
    if dim in bounds:
        low, high = bounds[dim]
        return f"{dim} in [{low}, {high}]"
    return f"{dim} ≥ 1"


def arrays_of(payload: object, inputs: tuple[Port, ...]) -> Mapping[str, object]:
    """A handle call's argument as named arrays: a dict by input name, or one array
    for a one-input model."""
    if isinstance(payload, Mapping):
        return payload
    if isinstance(payload, np.ndarray) and len(inputs) == 1:
        return {inputs[0].name: payload}
    names = ", ".join(p.name for p in inputs)
    raise BadRequest(
        f"expected a dict of numpy arrays by input name ({names}), got {type(payload).__name__}"
    )


def decode_json(body: bytes, inputs: tuple[Port, ...]) -> dict[str, np.ndarray]:
    """A JSON request `{"inputs": {"x": [[...], ...]}}` as arrays of the inputs' dtypes.

    JSON numbers carry no dtype: a float input takes integers and reals, an
    integer input only integers, a bool input only `true`/`false`.
    """
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadRequest(f"malformed JSON: {err}") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), dict):
        names = ", ".join(f'"{p.name}": [...]' for p in inputs)
        raise BadRequest(f'expected a JSON object {{"inputs": {{{names}}}}}')
    by_name = {p.name: p for p in inputs}
    arrays: dict[str, np.ndarray] = {}
    for name, value in request["inputs"].items():
        port = by_name.get(name)
        if port is None:
            known = ", ".join(by_name)
            raise BadRequest(f"unknown input '{name}' (the model's inputs: {known})")
        arrays[name] = _array_of_json(value, port)
    return arrays


JSON_KINDS = {"f": "biuf", "i": "biu", "u": "biu", "b": "b"}
"""NumPy kind of an input → kinds of JSON-decoded arrays it accepts (`b` bool,
`i`/`u` integers, `f` reals)."""


def _array_of_json(value: object, port: Port) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nesting
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        raise BadRequest(
            f"input {port.describe()}: expected nested lists of numbers of equal lengths"
        )
    if arr.dtype.kind not in JSON_KINDS.get(port.dtype.kind, ""):
        raise BadRequest(
            f"input {port.describe()}: expected {port.dtype} values, got {arr.dtype.kind!r} "
            "(JSON reals for an integer input?)"
        )
    if port.dtype.kind in "iu" and arr.size:
        info = np.iinfo(port.dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise BadRequest(f"input {port.describe()}: a value is out of {port.dtype}'s range")
    return arr.astype(port.dtype)


NPZ = "application/x-npz"
"""Content type of a binary request or answer: NumPy's `.npz` (`np.savez`), one array
per input or output name; dtypes and shapes travel with the arrays, no JSON."""


def decode_npz(body: bytes, inputs: tuple[Port, ...]) -> dict[str, np.ndarray]:
    """A binary request: `np.savez(buffer, x=array, ...)` by input name (never pickles)."""
    names = ", ".join(p.name for p in inputs)
    try:
        archive = np.load(io.BytesIO(body), allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise BadRequest(f"expected an .npz archive (np.savez with {names}), got one array")
        with archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise BadRequest(f"malformed {NPZ} body (np.savez with {names}): {err}") from None


def encode_npz(outputs: Mapping[str, np.ndarray]) -> bytes:
    """The answer to a binary request: the outputs by name, as `np.savez` writes them."""
    buffer = io.BytesIO()
    np.savez(buffer, **outputs)  # pyright: ignore[reportArgumentType] (names, not options)
    return buffer.getvalue()


def encode_json(outputs: Mapping[str, np.ndarray]) -> dict[str, object]:
    """The answer to a JSON request: `{"outputs": {"y": [[...], ...]}}`."""
    return {"outputs": {name: arr.tolist() for name, arr in outputs.items()}}


def describe_model(inputs: tuple[Port, ...], outputs: tuple[Port, ...], bounds: Bounds) -> dict:
    """What `GET` on the route answers about the model: its inputs and outputs, with the
    bounds of symbolic dimensions."""

    def entry(port: Port) -> dict[str, object]:
        return {"name": port.name, "dtype": str(port.dtype), "shape": list(port.shape)}

    return {
        "inputs": [entry(p) for p in inputs],
        "outputs": [entry(p) for p in outputs],
        "bounds": {name: list(b) for name, b in bounds.items()},
    }
