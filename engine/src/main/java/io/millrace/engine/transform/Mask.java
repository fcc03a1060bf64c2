package io.millrace.engine.transform;

/**
 * How a column's values are hidden from the destinations ({@code transforms.tables[].mask}). A masked column reaches
 * destinations as a {@code text} column; SQL NULL stays NULL, and an unchanged TOASTed value stays unchanged (its
 * masked value is the one the destination holds). docs/EVENTS.md, "Transforms".
 */
public sealed interface Mask {

    /** The setting's own spelling, e.g. {@code truncate(4)}. */
    String spelling();

    /** Every value becomes {@link #VALUE}. */
    record Redact() implements Mask {
        public static final String VALUE = "[redacted]";

        @Override
        public String spelling() {
            return "redact";
        }
    }

    /**
     * The value's text form, hashed with HMAC-SHA256 under the salt ({@code transforms.hash_salt_env} or
     * {@code hash_salt_file}), as 64 lower-case hex digits: the same value gives the same hash, so it still joins and
     * keys a row.
     */
    record Hash() implements Mask {
        @Override
        public String spelling() {
            return "hash";
        }
    }

    /** The first {@code length} characters of the value's text form. */
    record Truncate(int length) implements Mask {
        public Truncate {
            if (length < 0) {
                throw new IllegalArgumentException("truncate length must not be negative, got " + length);
            }
        }

        @Override
        public String spelling() {
            return "truncate(" + length + ")";
        }
    }

    /** A {@link io.millrace.core.transform.Transform} of the user's, found on the class path by its name. */
    record Custom(String name, io.millrace.core.transform.Transform transform) implements Mask {
        @Override
        public String spelling() {
            return "java(" + name + ")";
        }
    }

    /** Reads {@code redact}, {@code hash}, {@code truncate(N)} or {@code java(name)}; null when it is none of them. */
    public static Mask parse(String s) {
        return parse(s, name -> null);
    }

    /**
     * As {@link #parse(String)}, with {@code java(name)} looked up in {@code transforms} (null: none of that name).
     *
     * @throws IllegalArgumentException naming the installed transforms when {@code java(name)} names none of them
     */
    public static Mask parse(String s, java.util.function.Function<String, io.millrace.core.transform.Transform> transforms) {
        java.util.regex.Matcher j = java.util.regex.Pattern.compile("java\\s*\\(\\s*([A-Za-z0-9_.-]+)\\s*\\)").matcher(s.trim());
        if (j.matches()) {
            io.millrace.core.transform.Transform t = transforms.apply(j.group(1));
            if (t == null) {
                throw new IllegalArgumentException("no Transform named '" + j.group(1) + "' is on the class path");
            }
            return new Custom(j.group(1), t);
        }
        String t = s.trim().toLowerCase(java.util.Locale.ROOT);
        if (t.equals("redact")) {
            return new Redact();
        }
        if (t.equals("hash")) {
            return new Hash();
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("truncate\\s*\\(\\s*(\\d{1,6})\\s*\\)").matcher(t);
        return m.matches() ? new Truncate(Integer.parseInt(m.group(1))) : null;
    }
}
