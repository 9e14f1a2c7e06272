// RUN: lamina-opt %s --split-input-file -p plan-devices --verify-diagnostics | filecheck %s

// An op's explicit device contradicts an on_device of its result: the
// result cannot be produced in two places.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @op_vs_on_device(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.relu %x {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'graph.on_device' op device conflict for its operand: #lamina.device<"gpu", 0> (from graph.on_device at}}
    %b = graph.on_device %a {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: 'graph.on_device' op device conflict for its operand: #lamina.device<"gpu", 0> (from graph.on_device at {{.*}}:9:5) vs #lamina.device<"cpu", 0> (from `device` of graph.relu at {{.*}}:7:5)

// -----

// A device_copy whose src contradicts where its operand is fixed.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @bad_src(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.device_copy' op device conflict for its operand (`src`): #lamina.device<"cpu", 1> (from `src` of graph.device_copy}}
    %b = graph.device_copy %x {src = #lamina.device<"cpu", 1>, dst = #lamina.device<"cpu", 2>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: vs #lamina.device<"cpu", 0> (from `device` of parameter #0 of @bad_src

// -----

// on_device of a parameter whose device the function's arg_attrs fix elsewhere.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @param(%x: tensor<4xf32> {device = #lamina.device<"cpu", 0>}) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.on_device' op device conflict for its operand: #lamina.device<"cpu", 1>}}
    %b = graph.on_device %x {device = #lamina.device<"cpu", 1>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: (from `device` of parameter #0 of @param

// -----

// A device_copy from a device to itself.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @same(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.device_copy' op copies from #lamina.device<"cpu", 0> to the same device}}
    %b = graph.device_copy %x {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: copies from #lamina.device<"cpu", 0> to the same device

// -----

// An unknown device kind.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @tpu(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.relu' op unknown device kind 'tpu' in #lamina.device<"tpu", 0> (known kinds: cpu, gpu)}}
    %b = graph.relu %x {device = #lamina.device<"tpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: unknown device kind 'tpu'

// -----

// An unknown device kind in a function's arg_attrs.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // expected-error @+1 {{'graph.func' op unknown device kind 'npu'}}
  graph.func @npu(%x: tensor<4xf32> {device = #lamina.device<"npu", 3>}) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
}
// CHECK: unknown device kind 'npu'

// -----

// A `device` entry that is not a device at all.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  // expected-error @+1 {{'graph.func' op expected a #lamina.device, got "gpu"}}
  graph.func @notadevice(%x: tensor<4xf32> {device = "gpu"}) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
}
// CHECK: expected a #lamina.device, got "gpu"

// -----

// A function value whose device signature cannot unify: @apply's parameter
// %f is bound to a function returning on cpu:0 by one caller and to one
// returning on cpu:1 by another. Function values are never copied.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @on0(%x: tensor<4xf32>) -> (tensor<4xf32> {device = #lamina.device<"cpu", 0>}) {
    graph.return %x : tensor<4xf32>
  }
  graph.func @on1(%x: tensor<4xf32>) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>}) {
    graph.return %x : tensor<4xf32>
  }
  graph.func @apply(%f: !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.invoke %f(%x) {pure} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %y : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %f = graph.closure @on0() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %g = graph.closure @on1() : () -> !graph.fn<(tensor<4xf32>) -> tensor<4xf32>>
    %a = graph.call @apply(%f, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'graph.call' op device conflict for function value operand #0 (function signature): #lamina.device<"cpu", 0> (from `device` of result #0 of @on0}}
    %b = graph.call @apply(%g, %x) : (!graph.fn<(tensor<4xf32>) -> tensor<4xf32>>, tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: vs #lamina.device<"cpu", 1> (from `device` of result #0 of @on1

// -----

// A call's explicit device contradicting its callee's result device.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @on1(%x: tensor<4xf32>) -> (tensor<4xf32> {device = #lamina.device<"cpu", 1>}) {
    graph.return %x : tensor<4xf32>
  }
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'graph.call' op device conflict for its first tensor value: #lamina.device<"cpu", 0>}}
    %a = graph.call @on1(%x) {device = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %a : tensor<4xf32>
  }
}
// CHECK: (from `device` of result #0 of @on1

// -----

// An unknown kind as the module's default device.
// expected-error @+1 {{'builtin.module' op unknown device kind 'tpu'}}
builtin.module attributes {lamina.phase = #lamina.phase<optimization>, lamina.default_device = #lamina.device<"tpu", 0>} {
  graph.func @d(%x: tensor<4xf32>) -> tensor<4xf32> {
    graph.return %x : tensor<4xf32>
  }
}
// CHECK: unknown device kind 'tpu'

// -----

// plan-devices runs in phase optimization.
// expected-error @+1 {{pass 'plan-devices' cannot run in phase 'ingestion'}}
builtin.module {
}
// CHECK: pass 'plan-devices' cannot run in phase 'ingestion'

// -----

// A negative device index is rejected when the attribute is parsed.
builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {
  graph.func @neg(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{device index must be >= 0, got -1}}
    %b = graph.relu %x {device = #lamina.device<"cpu", -1>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %b : tensor<4xf32>
  }
}
// CHECK: device index must be >= 0, got -1
