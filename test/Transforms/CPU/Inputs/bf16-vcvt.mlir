// f32 -> bf16 -> f32 of 24 lanes (one VCVTNEPS2BF16 of 16, one of 8): ties
// to even, values just above a tie, the largest finite values (one rounds
// to infinity), a NaN with a payload, infinities, -0, ordinary values.
// Printed as the f32 bits.
func.func @main() {
  %v = arith.constant dense<[1.0, 1.00390625, 1.01171875, 1.0078125, 1.00390637, -2.5, 3.3895314e38, 3.4028235e38, 0x7FC00001, 0xFF800000, 0x7F800000, -0.0, 0x7F7FFFFF, 0x3F80FFFF, 0.1, -0.3, 65504.0, 1.0e-3, -7.75, 2.0, 0x3F818000, 0x3F828000, 0xBF818001, 1.0e10]> : vector<24xf32>
  %t = arith.truncf %v : vector<24xf32> to vector<24xbf16>
  %e = arith.extf %t : vector<24xbf16> to vector<24xf32>
  %b = arith.bitcast %e : vector<24xf32> to vector<24xi32>
  vector.print %b : vector<24xi32>
  return
}
