package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;
import io.millrace.core.types.PgGeometry.Box;
import io.millrace.core.types.PgGeometry.Circle;
import io.millrace.core.types.PgGeometry.Line;
import io.millrace.core.types.PgGeometry.Lseg;
import io.millrace.core.types.PgGeometry.Path;
import io.millrace.core.types.PgGeometry.Point;
import io.millrace.core.types.PgGeometry.Polygon;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * point, line, lseg, box, path, polygon, circle: {@link PgGeometry} values from the server's text
 * (point_out etc.) and binary (point_send etc.: float8 fields, path with a closed byte and an int32
 * count, polygon with an int32 count). Text and JSON are the server's text, floats printed by
 * {@link FloatText} as the server prints them.
 */
final class GeometricCodecs {
    private GeometricCodecs() {
    }

    /** The shared parts: the text parser and the JSON form (the text). */
    abstract static class Geo extends BaseCodec {
        Geo(String name) {
            super(name);
        }

        abstract Object parse(Parser p);

        @Override
        public final Object decodeText(String text) {
            Parser p = new Parser(this, text);
            Object v = parse(p);
            p.end();
            return v;
        }

        @Override
        public final void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(toPgText(value));
        }

        final int count(byte[] buf, int off, int len, int at, int fixed) {
            if (len < at + 4 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "too short");
            }
            int n = i32(buf, off + at);
            if (n < 0 || (long) len != at + 4 + 16L * n || n == 0 && fixed > 0) {
                throw badBinary(buf, off, len, "point count " + n + " does not match the length");
            }
            return n;
        }
    }

    static double f8(byte[] b, int o) {
        return Double.longBitsToDouble(BaseCodec.i64(b, o));
    }

    static Point point(byte[] b, int o) {
        return new Point(f8(b, o), f8(b, o + 8));
    }

    static StringBuilder text(StringBuilder sb, Point p) {
        return sb.append('(').append(FloatText.pg(p.x())).append(',').append(FloatText.pg(p.y())).append(')');
    }

    static List<Point> points(byte[] b, int o, int n) {
        List<Point> pts = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            pts.add(point(b, o + 16 * i));
        }
        return pts;
    }

    static StringBuilder text(StringBuilder sb, List<Point> pts) {
        for (int i = 0; i < pts.size(); i++) {
            text(i == 0 ? sb : sb.append(','), pts.get(i));
        }
        return sb;
    }

    static final class PointCodec extends Geo {
        PointCodec() {
            super("point");
        }

        @Override
        Object parse(Parser p) {
            return p.point();
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 16);
            return point(buf, off);
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Point pt) {
                return text(new StringBuilder(), pt).toString();
            }
            throw wrongValue(value);
        }
    }

    static final class LineCodec extends Geo {
        LineCodec() {
            super("line");
        }

        @Override
        Object parse(Parser p) {
            p.expect('{');
            double a = p.number();
            p.expect(',');
            double b = p.number();
            p.expect(',');
            double c = p.number();
            p.expect('}');
            return new Line(a, b, c);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 24);
            return new Line(f8(buf, off), f8(buf, off + 8), f8(buf, off + 16));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Line l) {
                return "{" + FloatText.pg(l.a()) + "," + FloatText.pg(l.b()) + "," + FloatText.pg(l.c()) + "}";
            }
            throw wrongValue(value);
        }
    }

    static final class LsegCodec extends Geo {
        LsegCodec() {
            super("lseg");
        }

        @Override
        Object parse(Parser p) {
            p.expect('[');
            Point a = p.point();
            p.expect(',');
            Point b = p.point();
            p.expect(']');
            return new Lseg(a, b);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 32);
            return new Lseg(point(buf, off), point(buf, off + 16));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Lseg l) {
                StringBuilder sb = new StringBuilder("[");
                text(text(sb, l.p1()).append(','), l.p2());
                return sb.append(']').toString();
            }
            throw wrongValue(value);
        }
    }

    static final class BoxCodec extends Geo {
        BoxCodec() {
            super("box");
        }

        @Override
        Object parse(Parser p) {
            Point a = p.point();
            p.expect(',');
            return new Box(a, p.point());
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 32);
            return new Box(point(buf, off), point(buf, off + 16));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Box b) {
                StringBuilder sb = new StringBuilder();
                return text(text(sb, b.high()).append(','), b.low()).toString();
            }
            throw wrongValue(value);
        }
    }

    static final class PathCodec extends Geo {
        PathCodec() {
            super("path");
        }

        @Override
        Object parse(Parser p) {
            char open = p.peek();
            if (open != '[' && open != '(') {
                throw p.bad("expected '[' or '('");
            }
            p.expect(open);
            List<Point> pts = p.pointList();
            p.expect(open == '[' ? ']' : ')');
            return new Path(open == '(', pts);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            int n = count(buf, off, len, 1, 1);
            int closed = buf[off];
            if (closed != 0 && closed != 1) {
                throw badBinary(buf, off, len, "closed flag " + closed);
            }
            return new Path(closed == 1, points(buf, off + 5, n));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Path path) {
                StringBuilder sb = new StringBuilder().append(path.closed() ? '(' : '[');
                return text(sb, path.points()).append(path.closed() ? ')' : ']').toString();
            }
            throw wrongValue(value);
        }
    }

    static final class PolygonCodec extends Geo {
        PolygonCodec() {
            super("polygon");
        }

        @Override
        Object parse(Parser p) {
            p.expect('(');
            List<Point> pts = p.pointList();
            p.expect(')');
            return new Polygon(pts);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            int n = count(buf, off, len, 0, 1);
            return new Polygon(points(buf, off + 4, n));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Polygon poly) {
                return text(new StringBuilder("("), poly.points()).append(')').toString();
            }
            throw wrongValue(value);
        }
    }

    static final class CircleCodec extends Geo {
        CircleCodec() {
            super("circle");
        }

        @Override
        Object parse(Parser p) {
            p.expect('<');
            Point c = p.point();
            p.expect(',');
            double r = p.number();
            p.expect('>');
            return new Circle(c, r);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 24);
            return new Circle(point(buf, off), f8(buf, off + 16));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Circle c) {
                return text(new StringBuilder("<"), c.center()).append(',').append(FloatText.pg(c.radius())).append('>').toString();
            }
            throw wrongValue(value);
        }
    }

    /** Reads the output functions' forms (blanks allowed between the parts). One parse, one thread. */
    static final class Parser {
        private final BaseCodec codec;
        private final String s;
        private int p;

        Parser(BaseCodec codec, String s) {
            this.codec = codec;
            this.s = s;
        }

        char peek() {
            skip();
            return p < s.length() ? s.charAt(p) : 0;
        }

        void expect(char c) {
            if (peek() != c) {
                throw bad("expected '" + c + "' at position " + p);
            }
            p++;
        }

        Point point() {
            expect('(');
            double x = number();
            expect(',');
            double y = number();
            expect(')');
            return new Point(x, y);
        }

        List<Point> pointList() {
            List<Point> pts = new ArrayList<>();
            pts.add(point());
            while (peek() == ',') {
                p++;
                pts.add(point());
            }
            return pts;
        }

        double number() {
            skip();
            int start = p;
            while (p < s.length() && "0123456789.eE+-NaInfity".indexOf(s.charAt(p)) >= 0) {
                p++;
            }
            String t = s.substring(start, p);
            if (t.isEmpty()) {
                throw bad("expected a number at position " + start);
            }
            try {
                return NumberCodecs.Float8.parse(codec, t);
            } catch (IllegalArgumentException e) {
                throw bad("expected a number at position " + start);
            }
        }

        void end() {
            if (peek() != 0) {
                throw bad("unexpected text at position " + p);
            }
        }

        private void skip() {
            while (p < s.length() && Character.isWhitespace(s.charAt(p))) {
                p++;
            }
        }

        IllegalArgumentException bad(String why) {
            return codec.badText(s, why);
        }
    }
}
