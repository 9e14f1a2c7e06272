// RUN: rm -rf %t.cache
// RUN: env LAMINA_CACHE=1 LAMINA_CACHE_DIR=%t.cache lamina-run %s --stats | filecheck %s --check-prefix=MISS
// RUN: env LAMINA_CACHE=1 LAMINA_CACHE_DIR=%t.cache lamina-run %s --stats | filecheck %s --check-prefix=HIT
// RUN: env LAMINA_CACHE=0 lamina-run %s --stats | filecheck %s --check-prefix=OFF

// `lamina-run --stats`: time and memory per compile phase, LLVM steps
// included, the rest as (other), kernels by cache, and whether the disk
// cache hit (docs/compile-speed.md).

graph.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  graph.return %r : tensor<4xf32>
}

// MISS:      compile statistics (disk cache: miss)
// MISS-NEXT:   phase {{ +}}time (ms)  py peak (MiB)  rss peak (MiB)
// MISS-NEXT:   cache lookup
// MISS-NEXT:   import compiler
// MISS-NEXT:   parse + verify
// MISS-NEXT:   build pipeline
// MISS-NEXT:   ingestion
// MISS-NEXT:   optimization
// MISS-NEXT:   lowering
// MISS-NEXT:   codegen
// MISS-NEXT:     llvm: translate (llvm dialect -> LLVM IR)
// MISS-NEXT:     llvm: parse + verify
// MISS-NEXT:     llvm: optimize (O3)
// MISS-NEXT:     llvm: code generation
// MISS-NEXT:   cache write
// MISS-NEXT:   (other)
// MISS-NEXT:   total
// MISS-NEXT:   kernels: 1 (1 built, 0 from memory, 0 from disk)
// MISS:      out0: float32[4]

// HIT:      compile statistics (disk cache: hit)
// HIT-NEXT:   phase
// HIT-NEXT:   cache lookup
// HIT-NOT:    parse + verify
// HIT:        total
// HIT-NOT:    kernels:
// HIT:      out0: float32[4]

// OFF:      compile statistics (disk cache: off)
// OFF-NOT:  cache lookup
// OFF:      parse + verify
