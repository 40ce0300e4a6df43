// `-t dot` draws the fragments as a Graphviz graph (docs/pictures.md): one
// cluster per fragment, linear ops filled by their mask, fan-out adds as
// double octagons, references between fragments dashed.
// RUN: tidu-opt %s -t dot | filecheck %s --check-prefix=PRIMAL
// RUN: tidu-opt %s -p 'linearize{graph=@f wrt=x},linear-transpose{graph=@f::@jvp1}' -t dot | filecheck %s

// The worked example of examples/square.mlir: f(x) = (x + x) * x.
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %p1 = prim.add %x, %x : tensor<f64>
    %p2 = prim.mul %p1, %x : tensor<f64>
    cg.output %p2 : tensor<f64>
  }
}

// PRIMAL:      digraph tidu {
// PRIMAL:        subgraph "cluster_@f" {
// PRIMAL-NEXT:     label="@f  (cg.graph)";
// PRIMAL-NEXT:     n0 [label="%x: x", shape="invhouse"];
// PRIMAL-NEXT:     n1 [label="%p1 = prim.add"];
// PRIMAL-NEXT:     n2 [label="%p2 = prim.mul"];
// PRIMAL-NEXT:     o0 [label="output 0", shape="house"];
// PRIMAL-NEXT:     n0 -> n1;
// PRIMAL-NEXT:     n0 -> n1;
// PRIMAL-NEXT:     n1 -> n2;
// PRIMAL-NEXT:     n0 -> n2;
// PRIMAL-NEXT:     n2 -> o0;
// PRIMAL-NEXT:   }
// PRIMAL-NEXT: }
// PRIMAL-NOT:  dashed

// CHECK:      subgraph "cluster_@f" {
// CHECK:        n0 [label="%x: x", shape="invhouse"];
// CHECK:        n1 [label="%p1 = prim.add"];
// CHECK:        subgraph "cluster_@f::@jvp1" {
// CHECK-NEXT:     label="@f::@jvp1  (cg.linear, pass 1, active [true])";
// CHECK-NEXT:     n3 [label="%dx: tangent(x,1)", shape="invhouse", style="filled", fillcolor="#9ecae1"];
// CHECK-NEXT:     n4 [label="%0 = prim.add\n[active, active]", style="filled", fillcolor="#9ecae1"];
// CHECK-NEXT:     n5 [label="%1 = prim.mul\n[fixed, active]", style="filled", fillcolor="#fdd49e"];
// CHECK-NEXT:     n6 [label="%2 = prim.mul\n[active, fixed]", style="filled", fillcolor="#fdd49e"];
// CHECK-NEXT:     n7 [label="%3 = prim.add\n[active, active]", style="filled", fillcolor="#9ecae1"];
// CHECK-NEXT:     subgraph "cluster_@f::@jvp1::@vjp2" {
// CHECK-NEXT:       label="@f::@jvp1::@vjp2  (cg.linear, pass 2, active [true])";
// CHECK-NEXT:       n8 [label="%ct: cotangent(0,2)", shape="invhouse", style="filled", fillcolor="#9ecae1"];
// CHECK-NEXT:       n9 [label="%4 = prim.mul\n[fixed, active]", style="filled", fillcolor="#fdd49e"];
// CHECK-NEXT:       n10 [label="%5 = prim.mul\n[fixed, active]", style="filled", fillcolor="#fdd49e"];
// CHECK-NEXT:       n11 [label="%6 = prim.add\n[active, active]", style="filled", fillcolor="#9ecae1", shape="doubleoctagon", tooltip="fan-out add (linear-transpose)"];
// CHECK-NEXT:       n12 [label="%7 = prim.add\n[active, active]", style="filled", fillcolor="#9ecae1", shape="doubleoctagon", tooltip="fan-out add (linear-transpose)"];
// CHECK-NEXT:       o0 [label="output 0", shape="house"];
// CHECK:            n9 -> n11 [color="#2171b5"];
// CHECK:          }
// CHECK:        n3 -> n5 [color="#2171b5"];
// CHECK:      // references between fragments
// CHECK-NEXT: n1 -> n5 [style="dashed"];
// CHECK-NEXT: n0 -> n6 [style="dashed"];
// CHECK-NEXT: n0 -> n9 [style="dashed"];
// CHECK-NEXT: n1 -> n10 [style="dashed"];
// CHECK-NEXT: }
