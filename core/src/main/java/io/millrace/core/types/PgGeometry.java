package io.millrace.core.types;

import java.util.List;

/**
 * Values of PostgreSQL's geometric types, each a record of float8 fields. Equality is that of the
 * doubles' bits as {@link Double#compare} sees them (so {@code -0} differs from {@code 0} and
 * {@code NaN} equals {@code NaN}), like the server's binary form.
 */
public final class PgGeometry {
    private PgGeometry() {
    }

    /** {@code point}: {@code (x,y)}. */
    public record Point(double x, double y) {
    }

    /** {@code line}: the line {@code a·x + b·y + c = 0}, printed {@code {a,b,c}}. */
    public record Line(double a, double b, double c) {
    }

    /** {@code lseg}: the segment from {@code p1} to {@code p2}, printed {@code [(x1,y1),(x2,y2)]}. */
    public record Lseg(Point p1, Point p2) {
    }

    /** {@code box}: upper-right and lower-left corners (the server orders them), printed {@code (hx,hy),(lx,ly)}. */
    public record Box(Point high, Point low) {
    }

    /** {@code path}: open {@code [(x,y),...]} or closed {@code ((x,y),...)}. */
    public record Path(boolean closed, List<Point> points) {
        public Path {
            points = List.copyOf(points);
        }
    }

    /** {@code polygon}: {@code ((x,y),...)}. */
    public record Polygon(List<Point> points) {
        public Polygon {
            points = List.copyOf(points);
        }
    }

    /** {@code circle}: {@code <(x,y),r>}. */
    public record Circle(Point center, double radius) {
    }
}
