package io.millrace.core.change;

/** The kind of a change event, with Debezium's one-letter code. */
public enum Op {
    CREATE("c"), UPDATE("u"), DELETE("d"), READ("r"), TRUNCATE("t");

    private final String code;

    Op(String code) {
        this.code = code;
    }

    public String code() {
        return code;
    }
}
