package io.millrace.core.types;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Finds the codec for a type: built-in types by oid (cached, one immutable codec per oid), enums
 * as their label, domains through their base type, arrays over their element's codec, ranges and
 * multiranges over their subtype's codec, composites over their attributes' codecs (a composite
 * known without its attributes is text only), anything else as {@link PgUnknown} text (see
 * docs/TYPES.md for the list and the Java and JSON forms).
 *
 * <p>Thread-safe; called for every column of every Relation message, so the built-in path is an
 * array lookup.
 */
public final class Codecs {
    /** Built-in oids are below this (FirstGenbkiObjectId); user types are above 16384. */
    private static final int MAX_BUILTIN_OID = 10000;
    /** The only built-in element type whose array delimiter is not ','. */
    private static final int BOX_OID = 603;
    /** Guards against a resolver that loops (a domain over itself via a broken catalog). */
    private static final int MAX_DEPTH = 16;

    private static final TypeInfo[] BUILTIN_INFO = new TypeInfo[MAX_BUILTIN_OID];
    private static final TypeCodec[] BUILTIN_CODEC = new TypeCodec[MAX_BUILTIN_OID];

    static {
        base(16, 1000, "bool", 'B', new NumberCodecs.Bool());
        base(17, 1001, "bytea", 'U', new TextCodecs.Bytea());
        base(19, 1003, "name", 'S', new TextCodecs.Str("name"));
        base(20, 1016, "int8", 'N', NumberCodecs.Int.int8());
        base(21, 1005, "int2", 'N', NumberCodecs.Int.int2());
        base(23, 1007, "int4", 'N', NumberCodecs.Int.int4());
        base(25, 1009, "text", 'S', new TextCodecs.Str("text"));
        base(26, 1028, "oid", 'N', NumberCodecs.Int.oid());
        base(114, 199, "json", 'U', new TextCodecs.Str("json"));
        base(142, 143, "xml", 'U', new TextCodecs.Str("xml"));
        base(700, 1021, "float4", 'N', new NumberCodecs.Float4());
        base(701, 1022, "float8", 'N', new NumberCodecs.Float8());
        base(790, 791, "money", 'N', new NumberCodecs.Money());
        base(1042, 1014, "bpchar", 'S', new TextCodecs.Str("bpchar"));
        base(1043, 1015, "varchar", 'S', new TextCodecs.Str("varchar"));
        base(1082, 1182, "date", 'D', new DateTimeCodecs.Date());
        base(1083, 1183, "time", 'D', new DateTimeCodecs.Time());
        base(1114, 1115, "timestamp", 'D', new DateTimeCodecs.Timestamp(false));
        base(1184, 1185, "timestamptz", 'D', new DateTimeCodecs.Timestamp(true));
        base(1186, 1187, "interval", 'T', new DateTimeCodecs.Interval());
        base(1266, 1270, "timetz", 'D', new DateTimeCodecs.TimeTz());
        base(1700, 1231, "numeric", 'N', new NumberCodecs.Numeric());
        base(2950, 2951, "uuid", 'U', new TextCodecs.Uuid());
        base(3802, 3807, "jsonb", 'U', TextCodecs.Str.jsonb());
        base(650, 651, "cidr", 'I', new NetCodecs.Inet(true));
        base(869, 1041, "inet", 'I', new NetCodecs.Inet(false));
        base(829, 1040, "macaddr", 'U', new NetCodecs.Mac(6));
        base(774, 775, "macaddr8", 'U', new NetCodecs.Mac(8));
        base(1560, 1561, "bit", 'V', new NetCodecs.Bits("bit"));
        base(1562, 1563, "varbit", 'V', new NetCodecs.Bits("varbit"));
        base(3220, 3221, "pg_lsn", 'U', new NumberCodecs.PgLsn());
        base(3614, 3643, "tsvector", 'U', new TextSearchCodecs.TsVector());
        base(28, 1011, "xid", 'U', NumberCodecs.Int.unsigned32("xid"));
        base(29, 1012, "cid", 'U', NumberCodecs.Int.unsigned32("cid"));
        base(5069, 271, "xid8", 'U', NumberCodecs.Int.xid8());
        base(27, 1010, "tid", 'U', new SystemCodecs.Tid());
        base(5038, 5039, "pg_snapshot", 'U', new SystemCodecs.Snapshot("pg_snapshot"));
        base(2970, 2949, "txid_snapshot", 'U', new SystemCodecs.Snapshot("txid_snapshot"));
        base(3615, 3645, "tsquery", 'U', new TextSearchCodecs.TsQuery());
        base(600, 1017, "point", 'G', new GeometricCodecs.PointCodec());
        base(628, 629, "line", 'G', new GeometricCodecs.LineCodec());
        base(601, 1018, "lseg", 'G', new GeometricCodecs.LsegCodec());
        base(603, 1020, "box", 'G', new GeometricCodecs.BoxCodec());
        base(602, 1019, "path", 'G', new GeometricCodecs.PathCodec());
        base(604, 1027, "polygon", 'G', new GeometricCodecs.PolygonCodec());
        base(718, 719, "circle", 'G', new GeometricCodecs.CircleCodec());
        register(new TypeInfo(22, "pg_catalog", "int2vector", 'b', 'A', 21, 0), 1006, new SystemCodecs.Vector("int2vector", BUILTIN_CODEC[21]));
        register(new TypeInfo(30, "pg_catalog", "oidvector", 'b', 'A', 26, 0), 1013, new SystemCodecs.Vector("oidvector", BUILTIN_CODEC[26]));
        range(3904, 3905, "int4range", 23, 4451, 6150, "int4multirange");
        range(3926, 3927, "int8range", 20, 4536, 6157, "int8multirange");
        range(3906, 3907, "numrange", 1700, 4532, 6151, "nummultirange");
        range(3912, 3913, "daterange", 1082, 4535, 6155, "datemultirange");
        range(3908, 3909, "tsrange", 1114, 4533, 6152, "tsmultirange");
        range(3910, 3911, "tstzrange", 1184, 4534, 6153, "tstzmultirange");
    }

    /** A built-in range over a built-in subtype and its multirange (PostgreSQL 14+), with both arrays. */
    private static void range(int oid, int arrayOid, String name, int subtype, int multiOid, int multiArrayOid, String multiName) {
        RangeCodecs.Range codec = new RangeCodecs.Range(name, BUILTIN_CODEC[subtype]);
        register(new TypeInfo(oid, "pg_catalog", name, 'r', 'R', 0, 0, subtype, List.of()), arrayOid, codec);
        register(new TypeInfo(multiOid, "pg_catalog", multiName, 'm', 'R', 0, 0, oid, List.of()), multiArrayOid,
                new RangeCodecs.Multirange(multiName, codec));
    }

    private static void base(int oid, int arrayOid, String name, char category, TypeCodec codec) {
        register(new TypeInfo(oid, "pg_catalog", name, 'b', category, typelem(oid), 0), arrayOid, codec);
    }

    private static void register(TypeInfo type, int arrayOid, TypeCodec codec) {
        int oid = type.oid();
        BUILTIN_INFO[oid] = type;
        BUILTIN_CODEC[oid] = codec;
        BUILTIN_INFO[arrayOid] = new TypeInfo(arrayOid, "pg_catalog", "_" + type.name(), 'b', 'A', oid, 0);
        BUILTIN_CODEC[arrayOid] = new ArrayCodec("_" + type.name(), codec, oid == BOX_OID ? ';' : ',');
    }

    /** pg_type.typelem of the built-in non-array types that have one (fixed-length "arrays" to the catalog). */
    private static int typelem(int oid) {
        return switch (oid) {
            case 19 -> 18; // name: of "char"
            case 600, 628 -> 701; // point, line: of float8
            case 601, 603 -> 600; // lseg, box: of point
            default -> 0;
        };
    }

    private static final TypeResolver BUILTINS = Codecs::builtin;

    private Codecs() {
    }

    /**
     * The codec for {@code type}. Built-in types come from a cache; enums, domains and arrays of
     * user types are built on each call (cheap), looking up element and base types through
     * {@code resolver} and then the built-ins. A type nothing is known of decodes as
     * {@link PgUnknown} and does not support binary.
     */
    public static TypeCodec forType(TypeInfo type, TypeResolver resolver) {
        Objects.requireNonNull(type, "type");
        TypeCodec cached = builtinCodec(type.oid());
        return cached != null ? cached : build(type, resolver, 0);
    }

    /** The catalog entry of a built-in type (or array of one) that has a codec; {@code null} otherwise. */
    public static TypeInfo builtin(int oid) {
        return oid > 0 && oid < MAX_BUILTIN_OID ? BUILTIN_INFO[oid] : null;
    }

    /** A resolver that knows the built-in types of {@link #builtin(int)} and nothing else. */
    public static TypeResolver builtins() {
        return BUILTINS;
    }

    private static TypeCodec builtinCodec(int oid) {
        return oid > 0 && oid < MAX_BUILTIN_OID ? BUILTIN_CODEC[oid] : null;
    }

    private static TypeCodec build(TypeInfo type, TypeResolver resolver, int depth) {
        TypeCodec cached = builtinCodec(type.oid());
        if (cached != null) {
            return cached;
        }
        String name = label(type);
        if (depth > MAX_DEPTH) {
            return new FallbackCodec(name);
        }
        if (type.isDomain()) {
            TypeInfo base = resolve(type.baseOid(), resolver);
            return base == null ? new FallbackCodec(name) : new DomainCodec(name, build(base, resolver, depth + 1));
        }
        if (type.isEnum()) {
            return new TextCodecs.Str(name);
        }
        if (type.isRange()) {
            TypeInfo sub = resolve(type.rangeOid(), resolver);
            return sub == null ? new FallbackCodec(name) : new RangeCodecs.Range(name, build(sub, resolver, depth + 1));
        }
        if (type.isMultirange()) {
            TypeInfo range = resolve(type.rangeOid(), resolver);
            TypeCodec rc = range == null ? null : build(range, resolver, depth + 1);
            return rc instanceof RangeCodecs.Range r ? new RangeCodecs.Multirange(name, r) : new FallbackCodec(name);
        }
        if (type.isComposite() && !type.liveAttributes().isEmpty()) {
            return new CompositeCodec(name, type.oid(), shape(type.liveAttributes(), resolver, depth), resolver);
        }
        if (type.isArray()) {
            TypeInfo elem = resolve(type.elementOid(), resolver);
            TypeCodec elemCodec = elem == null ? new FallbackCodec("oid " + type.elementOid()) : build(elem, resolver, depth + 1);
            return new ArrayCodec(name, elemCodec, type.elementOid() == BOX_OID ? ';' : ',');
        }
        return new FallbackCodec(name);
    }

    /** A composite type's attributes with their codecs, dropped ones left out (read again when its shape changed: CompositeCodec). */
    static CompositeCodec.Shape shape(TypeInfo type, TypeResolver resolver) {
        return shape(type.liveAttributes(), resolver, 0);
    }

    /** These attributes of a composite type (all live) with their codecs, numbered by position where the catalog gave no number. */
    static CompositeCodec.Shape shape(List<TypeInfo.Attribute> attributes, TypeResolver resolver, int depth) {
        List<String> names = new ArrayList<>();
        List<Integer> oids = new ArrayList<>();
        List<Integer> numbers = new ArrayList<>();
        List<TypeCodec> fields = new ArrayList<>();
        for (TypeInfo.Attribute a : attributes) {
            TypeInfo t = resolve(a.typeOid(), resolver);
            names.add(a.name());
            oids.add(a.typeOid());
            numbers.add(a.number() > 0 ? a.number() : numbers.size() + 1);
            fields.add(t == null ? new FallbackCodec("oid " + Integer.toUnsignedString(a.typeOid())) : build(t, resolver, depth + 1));
        }
        return new CompositeCodec.Shape(names, oids, numbers, fields);
    }

    /**
     * The codec's label: {@code int4} for pg_catalog types, else {@code schema.name}, each part
     * double-quoted only where SQL would need it ({@code public.mood}, {@code "Odd Schema"."Color"}).
     */
    static String label(TypeInfo t) {
        return "pg_catalog".equals(t.schema()) ? t.name() : labelPart(t.schema()) + "." + labelPart(t.name());
    }

    private static String labelPart(String s) {
        boolean plain = !s.isEmpty() && (s.charAt(0) == '_' || (s.charAt(0) >= 'a' && s.charAt(0) <= 'z'));
        for (int i = 0; i < s.length() && plain; i++) {
            char c = s.charAt(i);
            plain = c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        }
        return plain ? s : Ident.quote(s);
    }

    private static TypeInfo resolve(int oid, TypeResolver resolver) {
        TypeInfo builtin = builtin(oid);
        if (builtin != null) {
            return builtin; // built-in oids are fixed; no need to ask the (possibly remote) resolver
        }
        TypeInfo t = resolver == null ? null : resolver.resolve(oid);
        return t;
    }
}
