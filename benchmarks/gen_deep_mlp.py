"""Write a deep MLP (`--layers` × matmul + add + relu) as graph IR, for compile-time measurements.

python benchmarks/gen_deep_mlp.py --layers 40 -o deep40.mlir
lamina-run deep40.mlir --pass-timing
"""

from __future__ import annotations

import argparse


def deep_mlp(layers: int, width: int = 256, batch: int = 32) -> str:
    act = f"tensor<{batch}x{width}xf32>"
    weight, bias = f"tensor<{width}x{width}xf32>", f"tensor<{width}xf32>"
    params = ", ".join(f"%w{i}: {weight}, %b{i}: {bias}" for i in range(layers))
    lines = [f"graph.func @main(%x: {act}, {params}) -> {act} {{"]
    value = "%x"
    for i in range(layers):
        lines += [
            f"  %m{i} = graph.matmul {value}, %w{i} : ({act}, {weight}) -> {act}",
            f"  %a{i} = graph.add %m{i}, %b{i} : ({act}, {bias}) -> {act}",
            f"  %r{i} = graph.relu %a{i} : ({act}) -> {act}",
        ]
        value = f"%r{i}"
    lines += [f"  graph.return {value} : {act}", "}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=40)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    with open(args.output, "w") as out:
        out.write(deep_mlp(args.layers, args.width))


if __name__ == "__main__":
    main()
