package io.millrace.core.types;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * float8 as the server prints it with {@code extra_float_digits} above 0 (PostgreSQL 12+'s Ryu
 * output): the shortest digits that read back as the same double, in fixed notation when the
 * decimal exponent is -4 … 14 ({@code 0.0001}, {@code 100000000000000}), else as {@code 1e+15},
 * {@code 1.5e-05} (exponent signed, at least two digits); {@code NaN}, {@code Infinity},
 * {@code -Infinity}, {@code -0}.
 *
 * <p>Neither JDK 17's {@code Double.toString} (sometimes a digit more, JDK-4511638) nor Schubfach
 * (at least two digits: {@code 4.9E-324}; it takes a decimal exactly halfway to the next double,
 * {@code 1e23}, where Ryu does not: the server prints {@code 9.999999999999999e+22}) gives Ryu's
 * digits, so they are searched here: for 1 to 17 digits, the exact value rounded half-even (Ryu's
 * choice among equally short candidates, the nearest), or failing that its neighbour on the other
 * side, is taken when it lies strictly between the midpoints to the neighbouring doubles (the
 * server never prints a midpoint, even one that would read back as the double: {@code 1e23} →
 * {@code 9.999999999999999e+22}, {@code 2153077475783920128} → {@code 2.1530774757839201e+18}).
 */
final class FloatText {
    private FloatText() {
    }

    static String pg(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        if (d == 0) {
            return Double.doubleToRawLongBits(d) < 0 ? "-0" : "0";
        }
        BigDecimal shortest = shortest(Math.abs(d)).stripTrailingZeros();
        String digits = shortest.unscaledValue().toString();
        int exp = digits.length() - 1 - shortest.scale(); // decimal exponent of the first digit
        StringBuilder sb = new StringBuilder(digits.length() + 8);
        if (d < 0) {
            sb.append('-');
        }
        if (exp >= -4 && exp < 15) {
            if (exp < 0) {
                sb.append("0.").append("0".repeat(-exp - 1)).append(digits);
            } else if (digits.length() <= exp + 1) {
                sb.append(digits).append("0".repeat(exp + 1 - digits.length()));
            } else {
                sb.append(digits, 0, exp + 1).append('.').append(digits, exp + 1, digits.length());
            }
        } else {
            sb.append(digits.charAt(0));
            if (digits.length() > 1) {
                sb.append('.').append(digits, 1, digits.length());
            }
            int a = Math.abs(exp);
            sb.append('e').append(exp < 0 ? '-' : '+').append(a < 10 ? "0" : "").append(a);
        }
        return sb.toString();
    }

    /** The shortest decimal Ryu prints for a positive finite double. */
    private static BigDecimal shortest(double d) {
        BigDecimal exact = new BigDecimal(d);
        BigDecimal two = BigDecimal.valueOf(2);
        BigDecimal upperMid = Math.nextUp(d) == Double.POSITIVE_INFINITY ? null : exact.add(new BigDecimal(Math.nextUp(d))).divide(two);
        BigDecimal lowerMid = exact.add(new BigDecimal(Math.nextDown(d))).divide(two);
        for (int p = 1; p < 17; p++) {
            BigDecimal c = exact.round(new MathContext(p, RoundingMode.HALF_EVEN));
            if (fits(c, d, lowerMid, upperMid)) {
                return c;
            }
            BigDecimal step = BigDecimal.ONE.scaleByPowerOfTen(-c.scale());
            BigDecimal other = c.compareTo(exact) < 0 ? c.add(step) : c.subtract(step);
            if (other.signum() > 0 && other.precision() == p && fits(other, d, lowerMid, upperMid)) {
                return other;
            }
        }
        return exact.round(new MathContext(17, RoundingMode.HALF_EVEN));
    }

    private static boolean fits(BigDecimal c, double d, BigDecimal lowerMid, BigDecimal upperMid) {
        return Double.parseDouble(c.toString()) == d && c.compareTo(lowerMid) != 0 && (upperMid == null || c.compareTo(upperMid) != 0);
    }
}
