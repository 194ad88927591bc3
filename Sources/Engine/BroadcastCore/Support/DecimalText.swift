/// `v` with a fixed number of decimals, without Foundation ("0" for NaN and infinities).
package func fixed(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let n = Int((abs(v) * scale).rounded())
    let whole = n / Int(scale), frac = n % Int(scale)
    var f = String(frac)
    while f.count < decimals { f = "0" + f }
    return (v < 0 && n != 0 ? "-" : "") + String(whole) + (decimals > 0 ? "." + f : "")
}
