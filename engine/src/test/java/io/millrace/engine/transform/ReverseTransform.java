package io.millrace.engine.transform;

import io.millrace.core.schema.TableRef;
import io.millrace.core.transform.Transform;

/** A user's Transform as a test has one: found through META-INF/services of the test class path. */
public final class ReverseTransform implements Transform {
    @Override
    public String name() {
        return "reverse";
    }

    @Override
    public String apply(TableRef table, String column, String text) {
        if (text.equals("boom")) {
            throw new IllegalStateException("cannot reverse " + text);
        }
        return column + ":" + new StringBuilder(text).reverse();
    }
}
