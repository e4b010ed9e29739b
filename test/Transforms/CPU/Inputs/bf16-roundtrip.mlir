// f32 -> bf16 -> f32 of ties (to even), values just above a tie, the
// largest finite values (one rounds to infinity), subnormals, a NaN with a
// payload, infinities, -0; then a bf16 addition. Printed as the f32 bits.
func.func @main() {
  %v = arith.constant dense<[1.0, 1.00390625, 1.01171875, 1.0078125, 1.00390637, -2.5, 3.3895314e38, 3.4028235e38, 1.0e-40, 9.1835e-41, 0x7FC00001, 0xFF800000, 0x7F800000, -0.0, 0x00008000, 0x00018000, 0x7F7FFFFF, 0x3F80FFFF]> : vector<18xf32>
  %t = arith.truncf %v : vector<18xf32> to vector<18xbf16>
  %e = arith.extf %t : vector<18xbf16> to vector<18xf32>
  %b = arith.bitcast %e : vector<18xf32> to vector<18xi32>
  vector.print %b : vector<18xi32>
  %s = vector.extract %v[1] : f32 from vector<18xf32>
  %st = arith.truncf %s : f32 to bf16
  %sum = arith.addf %st, %st : bf16
  %se = arith.extf %sum : bf16 to f32
  vector.print %se : f32
  return
}
