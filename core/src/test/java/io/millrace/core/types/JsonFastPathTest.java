package io.millrace.core.types;

import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Random;

import static io.millrace.core.types.JsonFormTest.json;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The JSON of numeric and timestamptz values written without a String per value (issue 16) is the text the earlier
 * code wrote: {@link BigDecimal#toPlainString()} and the ISO instant built with a StringBuilder (kept here as the
 * reference).
 */
class JsonFastPathTest {

    @Test
    void numericIsItsPlainString() {
        Random r = new Random(1700);
        BigDecimal[] fixed = {BigDecimal.ZERO, new BigDecimal("0.00"), new BigDecimal("-0.01"), new BigDecimal("0.1"),
                new BigDecimal("999999999999999999"), new BigDecimal("-999999999999999999"), new BigDecimal("0.999999999999999999"),
                new BigDecimal("1000000000000000000"), new BigDecimal("123.4500"), new BigDecimal("1E+3"), new BigDecimal("-7"),
                BigDecimal.valueOf(5, 40), BigDecimal.valueOf(5, 41), BigDecimal.valueOf(-123456789012345678L, 40),
                new BigDecimal("12345678901234567890.5")};
        for (BigDecimal d : fixed) {
            assertThat(json("numeric", d)).as("%s", d).isEqualTo('"' + d.toPlainString() + '"');
        }
        for (int i = 0; i < 200_000; i++) {
            long unscaled = r.nextLong() / (long) Math.pow(10, r.nextInt(19));
            BigDecimal d = BigDecimal.valueOf(unscaled, r.nextInt(45) - 2);
            assertThat(json("numeric", d)).as("%s", d).isEqualTo('"' + d.toPlainString() + '"');
        }
    }

    @Test
    void timestamptzIsTheIsoInstant() {
        Random r = new Random(2000);
        long[] fixed = {0, -1, 1, Long.MAX_VALUE - 1, Long.MIN_VALUE + 1, -63_113_904_000_000_000L /* year 0 */,
                -63_145_526_400_000_000L, 252_455_616_000_000_000L /* 10000-01-01 */, 252_455_615_999_999_999L,
                -59_042_995_200_000_000L /* year 129 */, 86_400_000_000L};
        char[] buf = new char[DateTimeText.ISO_INSTANT_MAX];
        for (long m : fixed) {
            assertThat(new String(buf, 0, DateTimeText.isoInstant(m, buf))).as("%d", m).isEqualTo(reference(m));
        }
        for (int i = 0; i < 200_000; i++) {
            long m = switch (i % 3) {
                case 0 -> r.nextLong();
                case 1 -> r.nextLong() % 4_000_000_000_000_000L;
                default -> (r.nextLong() % 1_000_000_000_000_000L) / 1_000_000 * 1_000_000; // whole seconds
            };
            assertThat(new String(buf, 0, DateTimeText.isoInstant(m, buf))).as("%d", m).isEqualTo(reference(m));
            assertThat(DateTimeText.isoInstant(m)).isEqualTo(reference(m));
        }
    }

    /** The StringBuilder version of {@link DateTimeText#isoInstant(long)} before issue 16. */
    private static String reference(long pgMicros) {
        StringBuilder sb = new StringBuilder(32);
        long day = Math.floorDiv(pgMicros, DateTimeText.MICROS_PER_DAY) + DateTimeText.PG_EPOCH_DAY;
        long tod = Math.floorMod(pgMicros, DateTimeText.MICROS_PER_DAY);
        long c = DateTimeText.civil(day);
        long y = c >> 16;
        if (y > 9999) {
            sb.append('+');
        } else if (y < 0) {
            sb.append('-');
        }
        DateTimeText.year4(sb, Math.abs(y));
        sb.append('-');
        DateTimeText.pad2(sb, (int) (c >> 8) & 0xff);
        sb.append('-');
        DateTimeText.pad2(sb, (int) c & 0xff);
        sb.append('T');
        long secs = tod / 1_000_000L;
        int frac = (int) (tod % 1_000_000L);
        DateTimeText.pad2(sb, (int) (secs / 3600));
        sb.append(':');
        DateTimeText.pad2(sb, (int) (secs / 60 % 60));
        sb.append(':');
        DateTimeText.pad2(sb, (int) (secs % 60));
        if (frac != 0) {
            DateTimeText.appendFraction6(sb, frac);
        }
        return sb.append('Z').toString();
    }

    /** numeric_send of {@code d}: ndigits, weight, sign, dscale, then base-10000 digits, zero groups at either end left out. */
    private static byte[] numericSend(BigDecimal d) {
        String plain = d.abs().toPlainString();
        int point = plain.indexOf('.');
        String whole = point < 0 ? plain : plain.substring(0, point);
        String frac = point < 0 ? "" : plain.substring(point + 1);
        whole = "0".repeat((4 - whole.length() % 4) % 4) + whole;
        frac = frac + "0".repeat((4 - frac.length() % 4) % 4);
        java.util.List<Integer> groups = new java.util.ArrayList<>();
        for (int i = 0; i < whole.length(); i += 4) {
            groups.add(Integer.parseInt(whole.substring(i, i + 4)));
        }
        int weight = groups.size() - 1;
        for (int i = 0; i < frac.length(); i += 4) {
            groups.add(Integer.parseInt(frac.substring(i, i + 4)));
        }
        while (!groups.isEmpty() && groups.get(0) == 0) {
            groups.remove(0);
            weight--;
        }
        while (!groups.isEmpty() && groups.get(groups.size() - 1) == 0) {
            groups.remove(groups.size() - 1);
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8 + 2 * groups.size());
        b.putShort((short) groups.size()).putShort((short) (groups.isEmpty() ? 0 : weight))
                .putShort((short) (d.signum() < 0 ? 0x4000 : 0)).putShort((short) d.scale());
        groups.forEach(g -> b.putShort((short) (int) g));
        return b.array();
    }

    @Test
    void binaryNumericsDecodeToTheirValueAtTheDisplayScale() {
        Random r = new Random(1184);
        TypeCodec numeric = TextAndBinaryFormsTest.c("numeric");
        for (int i = 0; i < 100_000; i++) {
            BigDecimal d = BigDecimal.valueOf(r.nextLong() / (long) Math.pow(10, r.nextInt(19)), r.nextInt(24) - 4);
            if (d.scale() < 0) {
                d = d.setScale(0);
            }
            byte[] wire = numericSend(d);
            Object v = numeric.decodeBinary(wire, 0, wire.length);
            assertThat(v).as("%s", d).isEqualTo(d); // BigDecimal.equals: the same digits and the same scale
        }
    }

    @Test
    void bigNumericsStillGoThroughTheirText() {
        BigDecimal big = new BigDecimal(new BigInteger("123456789012345678901234567890"), 7);
        assertThat(json("numeric", big)).isEqualTo("\"" + big.toPlainString() + "\"");
    }
}
