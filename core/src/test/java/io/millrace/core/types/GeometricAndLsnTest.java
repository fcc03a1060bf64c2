package io.millrace.core.types;

import io.millrace.core.Lsn;
import io.millrace.core.types.PgGeometry.Box;
import io.millrace.core.types.PgGeometry.Circle;
import io.millrace.core.types.PgGeometry.Line;
import io.millrace.core.types.PgGeometry.Lseg;
import io.millrace.core.types.PgGeometry.Path;
import io.millrace.core.types.PgGeometry.Point;
import io.millrace.core.types.PgGeometry.Polygon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static io.millrace.core.types.JsonFormTest.json;
import static io.millrace.core.types.TextAndBinaryFormsTest.bin;
import static io.millrace.core.types.TextAndBinaryFormsTest.c;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** pg_lsn and the geometric types: text and binary forms give one value; JSON and toPgText are the server's text. */
class GeometricAndLsnTest {
    private static final String ONE = "3ff0000000000000";
    private static final String TWO = "4000000000000000";
    private static final String MINUS_HALF = "bfe0000000000000";

    private static void same(String type, String text, String hexBytes, Object value) {
        assertThat(c(type).decodeText(text)).as("%s text %s", type, text).isEqualTo(value);
        assertThat(bin(type, hexBytes)).as("%s binary", type).isEqualTo(value);
        assertThat(c(type).toPgText(value)).isEqualTo(text);
        assertThat(json(c(type), value)).isEqualTo("\"" + text + "\"");
    }

    @Test
    void lsn() {
        same("pg_lsn", "16/B374D848", "00000016b374d848", Lsn.parse("16/B374D848"));
        same("pg_lsn", "FFFFFFFF/FFFFFFFF", "ffffffffffffffff", new Lsn(-1));
        assertThatThrownBy(() -> c("pg_lsn").decodeText("16-B3")).hasMessageContaining("invalid pg_lsn text value '16-B3'");
    }

    @Test
    void everyGeometricType() {
        Point p12 = new Point(1, 2);
        same("point", "(1,2)", ONE + TWO, p12);
        same("line", "{1,2,-0.5}", ONE + TWO + MINUS_HALF, new Line(1, 2, -0.5));
        same("lseg", "[(1,2),(2,1)]", ONE + TWO + TWO + ONE, new Lseg(p12, new Point(2, 1)));
        same("box", "(2,2),(1,1)", TWO + TWO + ONE + ONE, new Box(new Point(2, 2), new Point(1, 1)));
        same("path", "[(1,2),(2,1)]", "00" + "00000002" + ONE + TWO + TWO + ONE, new Path(false, List.of(p12, new Point(2, 1))));
        same("path", "((1,2))", "01" + "00000001" + ONE + TWO, new Path(true, List.of(p12)));
        same("polygon", "((1,2),(2,1))", "00000002" + ONE + TWO + TWO + ONE, new Polygon(List.of(p12, new Point(2, 1))));
        same("circle", "<(1,2),-0.5>", ONE + TWO + MINUS_HALF, new Circle(p12, -0.5));
        assertThat(c("point").decodeText(" ( 1 , 2 ) ")).isEqualTo(p12);
        assertThat(c("_box").decodeText("{(2,2),(1,1);(1,1),(0,0)}")).isEqualTo(PgArray.of(new Box(new Point(2, 2), new Point(1, 1)),
                new Box(new Point(1, 1), new Point(0, 0))));
    }

    @Test
    void malformedGeometryIsRefused() {
        assertThatThrownBy(() -> c("point").decodeText("(1,2")).hasMessageContaining("invalid point text value '(1,2'");
        assertThatThrownBy(() -> c("point").decodeText("(1,x)")).hasMessageContaining("expected a number");
        assertThatThrownBy(() -> c("point").decodeText("(1,2)3")).hasMessageContaining("unexpected text");
        assertThatThrownBy(() -> bin("polygon", "00000002" + ONE + TWO)).hasMessageContaining("does not match the length");
        assertThatThrownBy(() -> bin("path", "02" + "00000001" + ONE + TWO)).hasMessageContaining("closed flag");
        assertThatThrownBy(() -> bin("point", ONE)).hasMessageContaining("expected 16 bytes");
    }

    /** What the server prints (PostgreSQL 17, extra_float_digits = 1); CodecsIT checks many more against a server. */
    @ParameterizedTest
    @CsvSource({"0,0", "-0.0,-0", "1.5,1.5", "100,100", "1e14,100000000000000", "1e15,1e+15", "123456789012345,123456789012345",
        "1.5e-5,1.5e-05", "0.0001,0.0001", "0.00012,0.00012", "1e-300,1e-300", "1.7976931348623157e308,1.7976931348623157e+308",
        "4.9e-324,5e-324", "0.30000000000000004,0.30000000000000004", "1e22,1e+22", "1e23,9.999999999999999e+22", "2e-3,0.002",
        "NaN,NaN", "Infinity,Infinity", "-Infinity,-Infinity", "-1e-5,-1e-05", "2.2250738585072014e-308,2.2250738585072014e-308",
        "2153077475783920128,2.1530774757839201e+18"})
    void floatsPrintAsTheServerPrintsThem(double d, String server) {
        assertThat(FloatText.pg(d)).isEqualTo(server);
    }
}
