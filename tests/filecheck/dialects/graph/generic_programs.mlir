// RUN: lamina-opt %s --print-op-generic | lamina-opt --print-op-generic | filecheck %s
// RUN: lamina-opt %s | lamina-opt | filecheck %s --check-prefix=PRETTY

// Whole programs written in the generic form with the design's (docs/design.md) op and attribute
// names: they parse, verify, and print back (generic and pretty) to text that
// parses to the same module. @conv_blocks and @shapes spell properties as a
// plain attribute dictionary `{...}`, the others as `<{...}>`.

"builtin.module"() ({
// CHECK-LABEL: "graph.func"() <{sym_name = "mlp", function_type = (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>}> ({
// CHECK-NEXT:  ^bb0(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x4xf32>, %b2: tensor<4xf32>):
// CHECK-NEXT:  %r = "graph.dataflow"() ({
// CHECK-NEXT:  %0 = "graph.matmul"(%x, %w1) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:  %1 = "graph.add"(%0, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:  %2 = "graph.relu"(%1) : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:  %3 = "graph.matmul"(%2, %w2) : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:  %4 = "graph.add"(%3, %b2) : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:  "graph.output"(%4) : (tensor<8x4xf32>) -> ()
// CHECK-NEXT:  }) : () -> tensor<8x4xf32>
// CHECK-NEXT:  "graph.return"(%r) : (tensor<8x4xf32>) -> ()
// PRETTY-LABEL: graph.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x4xf32>, %b2: tensor<4xf32>) -> tensor<8x4xf32> {
// PRETTY-NEXT:  %r = graph.dataflow -> tensor<8x4xf32> {
// PRETTY-NEXT:  %0 = graph.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// PRETTY-NEXT:  %1 = graph.add %0, %b1 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// PRETTY-NEXT:  %2 = graph.relu %1 : (tensor<8x32xf32>) -> tensor<8x32xf32>
// PRETTY-NEXT:  %3 = graph.matmul %2, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
// PRETTY-NEXT:  %4 = graph.add %3, %b2 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// PRETTY-NEXT:  graph.output %4 : tensor<8x4xf32>
// PRETTY-NEXT:  }
// PRETTY-NEXT:  graph.return %r : tensor<8x4xf32>
// PRETTY-NEXT:  }
  "graph.func"() <{sym_name = "mlp", function_type = (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>}> ({
  ^bb0(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x4xf32>, %b2: tensor<4xf32>):
    %r = "graph.dataflow"() ({
      %0 = "graph.matmul"(%x, %w1) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
      %1 = "graph.add"(%0, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
      %2 = "graph.relu"(%1) : (tensor<8x32xf32>) -> tensor<8x32xf32>
      %3 = "graph.matmul"(%2, %w2) : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
      %4 = "graph.add"(%3, %b2) : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
      "graph.output"(%4) : (tensor<8x4xf32>) -> ()
    }) : () -> tensor<8x4xf32>
    "graph.return"(%r) : (tensor<8x4xf32>) -> ()
  }) : () -> ()
// CHECK-LABEL: "graph.func"() <{sym_name = "conv_blocks", function_type = (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<1x16x1x1xf32>, tensor<16x4x3x3xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x1x1xf32>}> ({
// CHECK-NEXT:  ^bb0(%x: tensor<2x3x32x32xf32>, %w1: tensor<16x3x3x3xf32>, %b1: tensor<1x16x1x1xf32>, %w2: tensor<16x4x3x3xf32>, %w3: tensor<32x16x3x3xf32>):
// CHECK-NEXT:  %0 = "graph.conv2d"(%x, %w1) <{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}> : (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<2x16x16x16xf32>
// CHECK-NEXT:  %1 = "graph.add"(%0, %b1) : (tensor<2x16x16x16xf32>, tensor<1x16x1x1xf32>) -> tensor<2x16x16x16xf32>
// CHECK-NEXT:  %2 = "graph.relu"(%1) : (tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
// CHECK-NEXT:  %3 = "graph.conv2d"(%2, %w2) <{padding = array<i64: 2, 2, 2, 2>, dilation = array<i64: 2, 2>, groups = 4 : i64}> : (tensor<2x16x16x16xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x16x16xf32>
// CHECK-NEXT:  %4 = "graph.max_pool2d"(%3) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}> : (tensor<2x16x16x16xf32>) -> tensor<2x16x8x8xf32>
// CHECK-NEXT:  %5 = "graph.conv2d"(%4, %w3) <{strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW"}> : (tensor<2x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x8x8xf32>
// CHECK-NEXT:  %6 = "graph.avg_pool2d"(%5) <{kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>}> : (tensor<2x32x8x8xf32>) -> tensor<2x32x8x8xf32>
// CHECK-NEXT:  %7 = "graph.sigmoid"(%6) : (tensor<2x32x8x8xf32>) -> tensor<2x32x8x8xf32>
// CHECK-NEXT:  %8 = "graph.global_avg_pool2d"(%7) : (tensor<2x32x8x8xf32>) -> tensor<2x32x1x1xf32>
// CHECK-NEXT:  "graph.return"(%8) : (tensor<2x32x1x1xf32>) -> ()
// PRETTY-LABEL: graph.func @conv_blocks(%x: tensor<2x3x32x32xf32>, %w1: tensor<16x3x3x3xf32>, %b1: tensor<1x16x1x1xf32>, %w2: tensor<16x4x3x3xf32>, %w3: tensor<32x16x3x3xf32>) -> tensor<2x32x1x1xf32> {
// PRETTY-NEXT:  %0 = graph.conv2d %x, %w1 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<2x16x16x16xf32>
// PRETTY-NEXT:  %1 = graph.add %0, %b1 : (tensor<2x16x16x16xf32>, tensor<1x16x1x1xf32>) -> tensor<2x16x16x16xf32>
// PRETTY-NEXT:  %2 = graph.relu %1 : (tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
// PRETTY-NEXT:  %3 = graph.conv2d %2, %w2 {padding = array<i64: 2, 2, 2, 2>, dilation = array<i64: 2, 2>, groups = 4 : i64} : (tensor<2x16x16x16xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x16x16xf32>
// PRETTY-NEXT:  %4 = graph.max_pool2d %3 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x16x16x16xf32>) -> tensor<2x16x8x8xf32>
// PRETTY-NEXT:  %5 = graph.conv2d %4, %w3 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW"} : (tensor<2x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x8x8xf32>
// PRETTY-NEXT:  %6 = graph.avg_pool2d %5 {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x32x8x8xf32>) -> tensor<2x32x8x8xf32>
// PRETTY-NEXT:  %7 = graph.sigmoid %6 : (tensor<2x32x8x8xf32>) -> tensor<2x32x8x8xf32>
// PRETTY-NEXT:  %8 = graph.global_avg_pool2d %7 : (tensor<2x32x8x8xf32>) -> tensor<2x32x1x1xf32>
// PRETTY-NEXT:  graph.return %8 : tensor<2x32x1x1xf32>
// PRETTY-NEXT:  }
  "graph.func"() <{sym_name = "conv_blocks", function_type = (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<1x16x1x1xf32>, tensor<16x4x3x3xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x1x1xf32>}> ({
  ^bb0(%x: tensor<2x3x32x32xf32>, %w1: tensor<16x3x3x3xf32>, %b1: tensor<1x16x1x1xf32>, %w2: tensor<16x4x3x3xf32>, %w3: tensor<32x16x3x3xf32>):
    %0 = "graph.conv2d"(%x, %w1) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<2x16x16x16xf32>
    %1 = "graph.add"(%0, %b1) : (tensor<2x16x16x16xf32>, tensor<1x16x1x1xf32>) -> tensor<2x16x16x16xf32>
    %2 = "graph.relu"(%1) : (tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
    %3 = "graph.conv2d"(%2, %w2) {groups = 4 : i64, dilation = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>} : (tensor<2x16x16x16xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x16x16xf32>
    %4 = "graph.max_pool2d"(%3) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x16x16x16xf32>) -> tensor<2x16x8x8xf32>
    %5 = "graph.conv2d"(%4, %w3) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW"} : (tensor<2x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x8x8xf32>
    %6 = "graph.avg_pool2d"(%5) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x32x8x8xf32>) -> tensor<2x32x8x8xf32>
    %7 = "graph.sigmoid"(%6) : (tensor<2x32x8x8xf32>) -> tensor<2x32x8x8xf32>
    %8 = "graph.global_avg_pool2d"(%7) : (tensor<2x32x8x8xf32>) -> tensor<2x32x1x1xf32>
    "graph.return"(%8) : (tensor<2x32x1x1xf32>) -> ()
  }) : () -> ()
// CHECK-LABEL: "graph.func"() <{sym_name = "attention", function_type = (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x48xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>}> ({
// CHECK-NEXT:  ^bb0(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %wqkv: tensor<16x48xf32>, %wo: tensor<16x16xf32>):
// CHECK-NEXT:  %ln = "graph.layer_norm"(%x, %g, %b) <{axis = -1 : i64, epsilon = 1.000000e-05 : f32}> : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:  %qkv = "graph.matmul"(%ln, %wqkv) : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
// CHECK-NEXT:  %r = "graph.reshape"(%qkv) : (tensor<2x8x48xf32>) -> tensor<2x8x3x2x8xf32>
// CHECK-NEXT:  %t = "graph.transpose"(%r) <{perm = array<i64: 2, 0, 3, 1, 4>}> : (tensor<2x8x3x2x8xf32>) -> tensor<3x2x2x8x8xf32>
// CHECK-NEXT:  %q = "graph.reshape"(%t) : (tensor<3x2x2x8x8xf32>) -> tensor<3x4x8x8xf32>
// CHECK-NEXT:  %qq = "graph.reduce_sum"(%q) <{axes = array<i64: 0>}> : (tensor<3x4x8x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:  %kt = "graph.transpose"(%qq) <{perm = array<i64: 0, 2, 1>}> : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:  %s = "graph.matmul"(%qq, %kt) : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:  %scale = "graph.constant"() <{value = dense<0.353553385> : tensor<f32>}> : () -> tensor<f32>
// CHECK-NEXT:  %ss = "graph.mul"(%s, %scale) : (tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:  %p = "graph.softmax"(%ss) <{axis = -1 : i64}> : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:  %o = "graph.matmul"(%p, %qq) : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:  %o2 = "graph.reshape"(%o) : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
// CHECK-NEXT:  %o3 = "graph.transpose"(%o2) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
// CHECK-NEXT:  %o4 = "graph.reshape"(%o3) : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:  %proj = "graph.matmul"(%o4, %wo) : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:  %res = "graph.add"(%x, %proj) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:  %act = "graph.gelu"(%res) <{approximate = "tanh"}> : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:  %act2 = "graph.gelu"(%act) : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:  "graph.return"(%act2) : (tensor<2x8x16xf32>) -> ()
// PRETTY-LABEL: graph.func @attention(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %wqkv: tensor<16x48xf32>, %wo: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
// PRETTY-NEXT:  %ln = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
// PRETTY-NEXT:  %qkv = graph.matmul %ln, %wqkv : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
// PRETTY-NEXT:  %r = graph.reshape %qkv : (tensor<2x8x48xf32>) -> tensor<2x8x3x2x8xf32>
// PRETTY-NEXT:  %t = graph.transpose %r {perm = array<i64: 2, 0, 3, 1, 4>} : (tensor<2x8x3x2x8xf32>) -> tensor<3x2x2x8x8xf32>
// PRETTY-NEXT:  %q = graph.reshape %t : (tensor<3x2x2x8x8xf32>) -> tensor<3x4x8x8xf32>
// PRETTY-NEXT:  %qq = graph.reduce_sum %q {axes = array<i64: 0>} : (tensor<3x4x8x8xf32>) -> tensor<4x8x8xf32>
// PRETTY-NEXT:  %kt = graph.transpose %qq {perm = array<i64: 0, 2, 1>} : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// PRETTY-NEXT:  %s = graph.matmul %qq, %kt : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// PRETTY-NEXT:  %scale = graph.constant dense<0.353553385> : tensor<f32>
// PRETTY-NEXT:  %ss = graph.mul %s, %scale : (tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
// PRETTY-NEXT:  %p = graph.softmax %ss {axis = -1 : i64} : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// PRETTY-NEXT:  %o = graph.matmul %p, %qq : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
// PRETTY-NEXT:  %o2 = graph.reshape %o : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
// PRETTY-NEXT:  %o3 = graph.transpose %o2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
// PRETTY-NEXT:  %o4 = graph.reshape %o3 : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
// PRETTY-NEXT:  %proj = graph.matmul %o4, %wo : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// PRETTY-NEXT:  %res = graph.add %x, %proj : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// PRETTY-NEXT:  %act = graph.gelu %res {approximate = "tanh"} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// PRETTY-NEXT:  %act2 = graph.gelu %act : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// PRETTY-NEXT:  graph.return %act2 : tensor<2x8x16xf32>
// PRETTY-NEXT:  }
  "graph.func"() <{sym_name = "attention", function_type = (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x48xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>}> ({
  ^bb0(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %wqkv: tensor<16x48xf32>, %wo: tensor<16x16xf32>):
    %ln = "graph.layer_norm"(%x, %g, %b) <{axis = -1 : i64, epsilon = 1.000000e-05 : f32}> : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %qkv = "graph.matmul"(%ln, %wqkv) : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
    %r = "graph.reshape"(%qkv) : (tensor<2x8x48xf32>) -> tensor<2x8x3x2x8xf32>
    %t = "graph.transpose"(%r) <{perm = array<i64: 2, 0, 3, 1, 4>}> : (tensor<2x8x3x2x8xf32>) -> tensor<3x2x2x8x8xf32>
    %q = "graph.reshape"(%t) : (tensor<3x2x2x8x8xf32>) -> tensor<3x4x8x8xf32>
    %qq = "graph.reduce_sum"(%q) <{axes = array<i64: 0>}> : (tensor<3x4x8x8xf32>) -> tensor<4x8x8xf32>
    %kt = "graph.transpose"(%qq) <{perm = array<i64: 0, 2, 1>}> : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %s = "graph.matmul"(%qq, %kt) : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %scale = "graph.constant"() <{value = dense<0.353553385> : tensor<f32>}> : () -> tensor<f32>
    %ss = "graph.mul"(%s, %scale) : (tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
    %p = "graph.softmax"(%ss) <{axis = -1 : i64}> : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %o = "graph.matmul"(%p, %qq) : (tensor<4x8x8xf32>, tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %o2 = "graph.reshape"(%o) : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
    %o3 = "graph.transpose"(%o2) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x2x8x8xf32>) -> tensor<2x8x2x8xf32>
    %o4 = "graph.reshape"(%o3) : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
    %proj = "graph.matmul"(%o4, %wo) : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %res = "graph.add"(%x, %proj) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %act = "graph.gelu"(%res) <{approximate = "tanh"}> : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %act2 = "graph.gelu"(%act) : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    "graph.return"(%act2) : (tensor<2x8x16xf32>) -> ()
  }) : () -> ()
// CHECK-LABEL: "graph.func"() <{sym_name = "broadcasting", function_type = (tensor<4x1x3xf32>, tensor<5x1xf32>, tensor<f32>, tensor<3xf32>) -> tensor<4x5x3xf32>}> ({
// CHECK-NEXT:  ^bb0(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %c: tensor<f32>, %d: tensor<3xf32>):
// CHECK-NEXT:  %0 = "graph.add"(%a, %b) : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %1 = "graph.sub"(%0, %c) : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %2 = "graph.mul"(%d, %1) : (tensor<3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %3 = "graph.div"(%2, %b) : (tensor<4x5x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %4 = "graph.maximum"(%3, %c) : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %5 = "graph.minimum"(%a, %4) : (tensor<4x1x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %6 = "graph.exp"(%5) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %7 = "graph.log"(%6) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %8 = "graph.sqrt"(%7) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %9 = "graph.rsqrt"(%8) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %10 = "graph.tanh"(%9) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %11 = "graph.erf"(%10) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  %12 = "graph.neg"(%11) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// CHECK-NEXT:  "graph.return"(%12) : (tensor<4x5x3xf32>) -> ()
// PRETTY-LABEL: graph.func @broadcasting(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %c: tensor<f32>, %d: tensor<3xf32>) -> tensor<4x5x3xf32> {
// PRETTY-NEXT:  %0 = graph.add %a, %b : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %1 = graph.sub %0, %c : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %2 = graph.mul %d, %1 : (tensor<3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %3 = graph.div %2, %b : (tensor<4x5x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %4 = graph.maximum %3, %c : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %5 = graph.minimum %a, %4 : (tensor<4x1x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %6 = graph.exp %5 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %7 = graph.log %6 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %8 = graph.sqrt %7 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %9 = graph.rsqrt %8 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %10 = graph.tanh %9 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %11 = graph.erf %10 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  %12 = graph.neg %11 : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
// PRETTY-NEXT:  graph.return %12 : tensor<4x5x3xf32>
// PRETTY-NEXT:  }
  "graph.func"() <{sym_name = "broadcasting", function_type = (tensor<4x1x3xf32>, tensor<5x1xf32>, tensor<f32>, tensor<3xf32>) -> tensor<4x5x3xf32>}> ({
  ^bb0(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %c: tensor<f32>, %d: tensor<3xf32>):
    %0 = "graph.add"(%a, %b) : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
    %1 = "graph.sub"(%0, %c) : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
    %2 = "graph.mul"(%d, %1) : (tensor<3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %3 = "graph.div"(%2, %b) : (tensor<4x5x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
    %4 = "graph.maximum"(%3, %c) : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
    %5 = "graph.minimum"(%a, %4) : (tensor<4x1x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %6 = "graph.exp"(%5) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %7 = "graph.log"(%6) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %8 = "graph.sqrt"(%7) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %9 = "graph.rsqrt"(%8) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %10 = "graph.tanh"(%9) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %11 = "graph.erf"(%10) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    %12 = "graph.neg"(%11) : (tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
    "graph.return"(%12) : (tensor<4x5x3xf32>) -> ()
  }) : () -> ()
// CHECK-LABEL: "graph.func"() <{sym_name = "shapes", function_type = (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<4xf32>) -> (tensor<2x8x4xf32>, tensor<3x1xf32>, tensor<f32>, tensor<4x2x8xi32>)}> ({
// CHECK-NEXT:  ^bb0(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %v: tensor<4xf32>):
// CHECK-NEXT:  %0 = "graph.concat"(%x, %y) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:  %1 = "graph.broadcast_to"(%v) : (tensor<4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:  %2 = "graph.add"(%0, %1) : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:  %3 = "graph.reduce_mean"(%x) <{axes = array<i64: 0, -1>, keepdims}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:  %4 = "graph.reshape"(%3) : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
// CHECK-NEXT:  %5 = "graph.reduce_max"(%y) : (tensor<2x5x4xf32>) -> tensor<f32>
// CHECK-NEXT:  %6 = "graph.reduce_sum"(%2) <{axes = array<i64: 1>}> : (tensor<2x8x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  %7 = "graph.transpose"(%2) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x8x4xf32>) -> tensor<4x2x8xf32>
// CHECK-NEXT:  %8 = "graph.cast"(%7) : (tensor<4x2x8xf32>) -> tensor<4x2x8xi32>
// CHECK-NEXT:  "graph.return"(%2, %4, %5, %8) : (tensor<2x8x4xf32>, tensor<3x1xf32>, tensor<f32>, tensor<4x2x8xi32>) -> ()
// PRETTY-LABEL: graph.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %v: tensor<4xf32>) -> (tensor<2x8x4xf32>, tensor<3x1xf32>, tensor<f32>, tensor<4x2x8xi32>) {
// PRETTY-NEXT:  %0 = graph.concat %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// PRETTY-NEXT:  %1 = graph.broadcast_to %v : (tensor<4xf32>) -> tensor<2x8x4xf32>
// PRETTY-NEXT:  %2 = graph.add %0, %1 : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
// PRETTY-NEXT:  %3 = graph.reduce_mean %x {axes = array<i64: 0, -1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// PRETTY-NEXT:  %4 = graph.reshape %3 : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
// PRETTY-NEXT:  %5 = graph.reduce_max %y : (tensor<2x5x4xf32>) -> tensor<f32>
// PRETTY-NEXT:  %6 = graph.reduce_sum %2 {axes = array<i64: 1>} : (tensor<2x8x4xf32>) -> tensor<2x4xf32>
// PRETTY-NEXT:  %7 = graph.transpose %2 {perm = array<i64: 2, 0, 1>} : (tensor<2x8x4xf32>) -> tensor<4x2x8xf32>
// PRETTY-NEXT:  %8 = graph.cast %7 : (tensor<4x2x8xf32>) -> tensor<4x2x8xi32>
// PRETTY-NEXT:  graph.return %2, %4, %5, %8 : tensor<2x8x4xf32>, tensor<3x1xf32>, tensor<f32>, tensor<4x2x8xi32>
// PRETTY-NEXT:  }
  "graph.func"() <{sym_name = "shapes", function_type = (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<4xf32>) -> (tensor<2x8x4xf32>, tensor<3x1xf32>, tensor<f32>, tensor<4x2x8xi32>)}> ({
  ^bb0(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %v: tensor<4xf32>):
    %0 = "graph.concat"(%x, %y) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
    %1 = "graph.broadcast_to"(%v) : (tensor<4xf32>) -> tensor<2x8x4xf32>
    %2 = "graph.add"(%0, %1) : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
    %3 = "graph.reduce_mean"(%x) {axes = array<i64: 0, -1>, keepdims} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
    %4 = "graph.reshape"(%3) : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
    %5 = "graph.reduce_max"(%y) : (tensor<2x5x4xf32>) -> tensor<f32>
    %6 = "graph.reduce_sum"(%2) {axes = array<i64: 1>} : (tensor<2x8x4xf32>) -> tensor<2x4xf32>
    %7 = "graph.transpose"(%2) {perm = array<i64: 2, 0, 1>} : (tensor<2x8x4xf32>) -> tensor<4x2x8xf32>
    %8 = "graph.cast"(%7) : (tensor<4x2x8xf32>) -> tensor<4x2x8xi32>
    "graph.return"(%2, %4, %5, %8) : (tensor<2x8x4xf32>, tensor<3x1xf32>, tensor<f32>, tensor<4x2x8xi32>) -> ()
  }) : () -> ()
}) : () -> ()

