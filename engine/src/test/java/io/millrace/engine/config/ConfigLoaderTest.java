package io.millrace.engine.config;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.DestinationProviders;
import io.millrace.core.sink.DiscardProvider;
import io.millrace.sink.jsonl.JsonlDestinationProvider;
import io.millrace.sink.jsonl.JsonlSinkConfig;
import io.millrace.sink.postgres.PostgresSinkConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Bad configuration, without a server: each mistake fails with {@link Kind#CONFIG} (exit code 2) and a
 * message that names the key (its full path) and the fix. Secrets never appear in a message.
 */
class ConfigLoaderTest {
    @TempDir
    Path dir;

    private static final String SOURCE = """
            source:
              host: 127.0.0.1
              port: 5432
              database: shop
              user: cdc
              password_env: SRC_PW
              tables: [public.orders]
            """;
    private static final String FILES = """
            destinations:
              - name: files
                type: jsonl
                directory: ./events
            """;
    private static final Map<String, String> ENV = Map.of("SRC_PW", "s3cret-src", "DST_PW", "s3cret-dst");

    private EngineConfig parse(String yaml) {
        return new ConfigLoader(ENV::get).parse(yaml, dir);
    }

    /** Parses {@code yaml}, expecting a configuration error; returns its message. */
    private String fail(String yaml) {
        return fail(yaml, ENV);
    }

    private String fail(String yaml, Map<String, String> env) {
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> new ConfigLoader(env::get).parse(yaml, dir));
        assertThat(e).as("a configuration error for:\n" + yaml).isNotNull();
        assertThat(e.kind()).isEqualTo(Kind.CONFIG);
        assertThat(e.kind().exitCode()).isEqualTo(2);
        assertThat(e.getMessage()).startsWith("config: ");
        for (String secret : env.values()) {
            if (!secret.isEmpty()) {
                assertThat(e.getMessage()).doesNotContain(secret);
            }
        }
        return e.getMessage();
    }

    @Test
    void aValidConfigurationIsReadAsWritten() {
        EngineConfig c = parse("name: shop\n" + SOURCE + """
                snapshot:
                  readers: 3
                destinations:
                  - name: replica
                    type: postgres
                    host: db2
                    port: 5433
                    database: replica
                    user: writer
                    password_env: DST_PW
                  - name: files
                    type: jsonl
                    directory: ./events
                """);
        assertThat(c.name()).isEqualTo("shop");
        assertThat(c.source().port()).isEqualTo(5432);
        assertThat(c.source().password().reveal()).isEqualTo("s3cret-src");
        assertThat(c.source().tables()).containsExactly(new TableRef("public", "orders"));
        assertThat(c.snapshot().readers()).isEqualTo(3);
        PostgresSinkConfig pg = (PostgresSinkConfig) c.destinations().get(0);
        assertThat(pg.jdbcUrl()).isEqualTo("jdbc:postgresql://db2:5433/replica");
        assertThat(pg.password().reveal()).isEqualTo("s3cret-dst");
        JsonlSinkConfig files = (JsonlSinkConfig) c.destinations().get(1);
        assertThat(files.directory().normalize()).isEqualTo(dir.resolve("events"));
    }

    @Test
    void theExampleFileIsValid() {
        Path example = Path.of("..", "config", "example.yaml");
        EngineConfig c = new ConfigLoader(Map.of("MILLRACE_SOURCE_PASSWORD", "a", "MILLRACE_REPLICA_PASSWORD", "b")::get).load(example);
        assertThat(c.destinations()).hasSize(2);
        assertThat(c.operations().health()).isEqualTo(EngineConfig.Health.defaults());
        assertThat(c.operations().logFormat()).isEqualTo(EngineConfig.LogFormat.TEXT);
    }

    @Test
    void snapshotsCopyInBinaryUnlessSourceBinaryIsOff() {
        EngineConfig auto = parse(SOURCE + FILES);
        assertThat(auto.snapshot().binary()).isTrue();
        assertThat(auto.online().binary()).isTrue();
        EngineConfig off = parse(SOURCE.replace("source:\n", "source:\n  binary: \"off\"\n") + FILES);
        assertThat(off.source().binary()).isEqualTo(io.millrace.source.SourceConfig.BinaryMode.OFF);
        assertThat(off.snapshot().binary()).isFalse();
        assertThat(off.online().binary()).isFalse();
    }

    @Test
    void healthBoundsAndLogFormatAreReadAndChecked() {
        EngineConfig c = parse(SOURCE + FILES + "operations: {ready_max_lag_s: 5, ready_max_lag_mb: 16, live_max_stall_s: 0, log_format: json}\n");
        assertThat(c.operations().health()).isEqualTo(new EngineConfig.Health(5_000, 16L << 20, 0));
        assertThat(c.operations().logFormat()).isEqualTo(EngineConfig.LogFormat.JSON);
        assertThat(fail(SOURCE + FILES + "operations: {log_format: xml}\n")).contains("operations.log_format").contains("text, json");
        assertThat(fail(SOURCE + FILES + "operations: {ready_max_lag_s: 0}\n")).contains("operations.ready_max_lag_s");
    }

    // ---- YAML itself ----

    @Test
    void invalidYamlNamesLineAndColumn() {
        String m = fail("""
                source:
                  host: 127.0.0.1
                  tables: [public.orders
                destinations: []
                """);
        assertThat(m).contains("not valid YAML").containsPattern("at line [34], column \\d+");
    }

    /** README's own pattern, written in example.yaml's [ ] style: YAML reads its ? as a complex key (found by a user). */
    @Test
    void aPatternWithAQuestionMarkInAFlowListSaysToQuoteIt() {
        String m = fail("source:\n  database: app\n  user: u\n  tables: [public.pk?]\ndestinations:\n  - {type: jsonl, directory: out}\n");
        assertThat(m).contains("not valid YAML at line 4").contains("must be quoted, e.g. tables: [\"sales.orders_20??\"]");
        assertThat(fail("source:\n  host: [a\n")).doesNotContain("quoted");
    }

    @Test
    void aTabForIndentationNamesItsLine() {
        String m = fail("source:\n\thost: x\n");
        assertThat(m).contains("not valid YAML at line 2, column 1").contains("Do not use").doesNotContain("\n");
    }

    @Test
    void aKeyGivenTwiceIsAnErrorNotTheLastValue() {
        // INV-like: never fall back silently — without strict duplicate detection the second port wins.
        String m = fail(SOURCE + "  port: 6543\n" + FILES);
        assertThat(m).contains("not valid YAML").contains("line 8").contains("Duplicate field 'port'");
    }

    @Test
    void anEmptyFileSaysWhereAnExampleIs() {
        assertThat(fail("")).contains("empty").contains("config/example.yaml");
        assertThat(fail("# only a comment\n")).contains("empty");
    }

    @Test
    void aListAtTheTopIsNotAConfiguration() {
        assertThat(fail("- a\n- b\n")).contains("the configuration must be a mapping");
    }

    @Test
    void aMissingFileIsNamed() {
        MillraceException e = catchThrowableOfType(MillraceException.class,
                () -> ConfigLoader.fromSystem().load(dir.resolve("nope.yaml")));
        assertThat(e.kind()).isEqualTo(Kind.CONFIG);
        assertThat(e.getMessage()).contains("nope.yaml").contains("does not exist");
    }

    // ---- unknown and misspelt keys ----

    @Test
    void aMisspeltSectionIsNamedNotReportedAsMissingSettings() {
        // Without the up-front check this reported "source.database is required".
        String m = fail(SOURCE.replace("source:", "sorce:") + FILES);
        assertThat(m).contains("config: sorce is not a known setting; did you mean 'source'?");
    }

    @Test
    void aMisspeltPasswordEnvIsSuggested() {
        String m = fail(SOURCE.replace("password_env", "pasword_env") + FILES);
        assertThat(m).contains("config: source.pasword_env is not a known setting; did you mean 'password_env'?");
    }

    @Test
    void aMisspeltRequiredKeyIsNamedNotReportedAsMissing() {
        String m = fail(SOURCE.replace("database:", "databse:") + FILES);
        assertThat(m).contains("source.databse is not a known setting; did you mean 'database'?");
    }

    @Test
    void unknownKeysInEverySectionAreRejectedWithTheKnownOnes() {
        assertThat(fail(SOURCE + "snapshot:\n  reader: 2\n" + FILES))
                .contains("snapshot.reader is not a known setting; did you mean 'readers'?").contains("known here:");
        assertThat(fail(SOURCE + "pipeline:\n  linger: 5\n" + FILES)).contains("pipeline.linger is not a known setting");
        assertThat(fail(SOURCE + "  ssl:\n    mod: require\n" + FILES)).contains("source.ssl.mod is not a known setting; did you mean 'mode'?");
        assertThat(fail(SOURCE + FILES + "    directroy: ./more\n"))
                .contains("destinations[0].directroy is not a known setting; did you mean 'directory'?");
        assertThat(fail(SOURCE + "completely_unrelated: 1\n" + FILES)).contains("completely_unrelated is not a known setting")
                .doesNotContain("did you mean");
    }

    @Test
    void aMisspeltDestinationTypeKeyIsNamed() {
        String m = fail(SOURCE + "destinations:\n  - name: files\n    tpye: jsonl\n    directory: ./events\n");
        assertThat(m).contains("destinations[0].tpye is not a known setting; did you mean 'type'?");
    }

    @Test
    void aKeyOfAnotherDestinationTypeIsRejected() {
        String m = fail(SOURCE + FILES + "    url: jdbc:postgresql://h/db\n");
        assertThat(m).contains("destinations[0].url is not a known setting").contains("known here: name, type, stdout, directory");
    }

    // ---- wrong types and ranges ----

    @Test
    void aPortThatIsNotANumberNamesTheRange() {
        assertThat(fail(SOURCE.replace("port: 5432", "port: \"abc\"") + FILES))
                .contains("config: source.port must be a whole number from 1 to 65535, got 'abc'");
        assertThat(fail(SOURCE.replace("port: 5432", "port: 70000") + FILES))
                .contains("config: source.port must be from 1 to 65535, got 70000");
    }

    @Test
    void zeroReadersIsOutOfRange() {
        assertThat(fail(SOURCE + "snapshot:\n  readers: 0\n" + FILES)).contains("config: snapshot.readers must be from 1 to 64, got 0");
        assertThat(fail(SOURCE + "snapshot:\n  readers: 2.5\n" + FILES)).contains("snapshot.readers must be a whole number");
    }

    @Test
    void wrongFormsNameTheExpectedForm() {
        assertThat(fail(SOURCE + "snapshot:\n  mode: full\n" + FILES))
                .contains("snapshot.mode must be one of initial, never, initial_only, got 'full'");
        assertThat(fail(SOURCE + "  create_publication: maybe\n" + FILES)).contains("source.create_publication must be true or false");
        assertThat(fail(SOURCE.replace("tables: [public.orders]", "tables: public.orders") + FILES)).contains("source.tables must be a list");
        assertThat(fail(SOURCE + "snapshot: 3\n" + FILES)).contains("snapshot must be a mapping");
        assertThat(fail(SOURCE + "pipeline:\n  memory_budget_mb: 8\n  batch_kb: 8192\n" + FILES))
                .contains("pipeline.batch_kb (8192) must be at most half of pipeline.memory_budget_mb (8 MB)");
        assertThat(fail(SOURCE.replace("tables: [public.orders]", "tables: ['public.\"orders']") + FILES))
                .contains("source.tables").contains("unterminated double quote");
    }

    @Test
    void anEmptyTableListIsRefusedNotTakenAsEveryTableOfThePublication() {
        // Absent, source.tables means "the tables of the existing publication"; an empty list is a mistake, never that.
        assertThat(fail(SOURCE.replace("tables: [public.orders]", "tables: []") + FILES))
                .contains("config: source.tables is an empty list").contains("tables: [public.orders]")
                .contains("remove source.tables");
        assertThat(parse(SOURCE.replace("  tables: [public.orders]\n", "") + FILES).source().tables()).isEmpty();
    }

    @Test
    void aBadSlotNameSaysWhatASlotNameIs() {
        assertThat(fail(SOURCE + "  slot: My-Slot\n" + FILES))
                .contains("config: source.slot must be 1 to 63 lower-case letters, digits or underscores").contains("got 'My-Slot'");
    }

    // ---- passwords ----

    @Test
    void aPasswordWrittenInTheFileIsRefusedWithoutRepeatingIt() {
        String m = fail(SOURCE + "  password: hunter2-literal\n" + FILES);
        assertThat(m).contains("config: source.password is not allowed").contains("source.password_env").contains("source.password_file")
                .doesNotContain("hunter2-literal");
        String d = fail(SOURCE + "destinations:\n  - {name: r, type: postgres, database: r, user: u, password: hunter2-literal}\n");
        assertThat(d).contains("destinations[0].password is not allowed").doesNotContain("hunter2-literal");
    }

    @Test
    void aPasswordEnvNamingAnUnsetVariableSaysToExportIt() {
        String m = fail(SOURCE + FILES, Map.of());
        assertThat(m).contains("config: source.password_env names the environment variable SRC_PW, which is not set; export it");
    }

    /**
     * A command reads only the secrets it uses: {@code reset} needs the destinations' passwords but neither the control
     * token nor the hash salt, {@code preflight} and {@code status} the source's only (a newcomer had to export a salt
     * to run {@code status}, and a control token to run {@code reset}). {@code run} needs every one.
     */
    @Test
    void eachCommandNeedsOnlyTheSecretsItUses() {
        String yaml = SOURCE + """
                destinations:
                  - name: replica
                    type: postgres
                    host: db2
                    database: replica
                    user: cdc
                    password_env: DST_PW
                operations:
                  http_port: 8089
                  control_token_env: CONTROL_TOKEN
                transforms:
                  hash_salt_env: SALT
                  tables:
                    - match: public.orders
                      mask: {email: hash}
                """;
        assertThat(fail(yaml)).contains("CONTROL_TOKEN"); // run
        ConfigLoader reset = new ConfigLoader(ENV::get).withoutRunSecrets();
        EngineConfig c = reset.parse(yaml, dir);
        assertThat(((PostgresSinkConfig) c.destinations().get(0)).password().reveal()).isEqualTo("s3cret-dst");
        assertThat(reset.deferred()).hasSize(2).anySatisfy(d -> assertThat(d).contains("CONTROL_TOKEN"))
                .anySatisfy(d -> assertThat(d).contains("transforms.hash_salt_env").contains("SALT"));
        MillraceException noDestinationPassword = catchThrowableOfType(MillraceException.class,
                () -> new ConfigLoader(Map.of("SRC_PW", "s3cret-src")::get).withoutRunSecrets().parse(yaml, dir));
        assertThat(noDestinationPassword.getMessage()).contains("destinations[0].password_env").contains("DST_PW");
        ConfigLoader status = new ConfigLoader(Map.of("SRC_PW", "s3cret-src")::get).sourceOnly();
        assertThat(status.parse(yaml, dir).source().database()).isEqualTo("shop");
        assertThat(status.deferred()).hasSize(3);
        assertThat(fail(yaml, Map.of("SRC_PW", "s3cret-src", "DST_PW", "s3cret-dst", "CONTROL_TOKEN", "t-0123456789abcdef")))
                .as("run, the salt unset").contains("transforms.hash_salt_env").contains("SALT");
    }

    @Test
    void aPasswordEnvNamingAnEmptyVariableIsAnError() {
        // An empty variable would otherwise connect with no password at all, failing later and less clearly.
        String m = fail(SOURCE + FILES, Map.of("SRC_PW", ""));
        assertThat(m).contains("source.password_env names the environment variable SRC_PW, which is empty");
    }

    @Test
    void passwordEnvAndPasswordFileTogetherAreAmbiguous() {
        assertThat(fail(SOURCE + "  password_file: pw.txt\n" + FILES)).contains("source.password_env and source.password_file are both set; keep one");
    }

    @Test
    void anUnreadablePasswordFileIsNamed() {
        String m = fail(SOURCE.replace("password_env: SRC_PW", "password_file: missing-pw.txt") + FILES);
        assertThat(m).contains("source.password_file names").contains("missing-pw.txt").contains("cannot be read");
    }

    @Test
    void aPasswordFileIsReadAndStripped() throws Exception {
        Files.writeString(dir.resolve("pw.txt"), "from-a-file\n");
        EngineConfig c = parse(SOURCE.replace("password_env: SRC_PW", "password_file: pw.txt") + FILES);
        assertThat(c.source().password().reveal()).isEqualTo("from-a-file");
    }

    @Test
    void aDestinationUrlIsNeverEchoedWithItsPassword() {
        String m = fail(SOURCE + "destinations:\n  - {name: r, type: postgres, url: 'postgres://u:url-secret@h/db', user: u}\n");
        assertThat(m).contains("destinations[0].url must start with jdbc:postgresql://").contains("'postgres:'").doesNotContain("url-secret");
        String q = fail(SOURCE + "destinations:\n  - {name: r, type: postgres, url: 'jdbc:postgresql://h/db?password=url-secret', user: u}\n");
        assertThat(q).contains("destinations[0].url must not hold a password").contains("destinations[0].password_env")
                .doesNotContain("url-secret");
    }

    // ---- destinations ----

    @Test
    void missingDestinationsShowAnExample() {
        assertThat(fail(SOURCE)).contains("config: destinations is required").contains("type: jsonl");
        assertThat(fail(SOURCE + "destinations: []\n")).contains("config: destinations is required");
    }

    @Test
    void duplicateDestinationNamesAreNamed() {
        String m = fail(SOURCE + """
                destinations:
                  - {name: out, type: jsonl, directory: a}
                  - {name: out, type: jsonl, directory: b}
                """);
        assertThat(m).contains("config: destinations[1].name 'out' is used by two destinations; names must be unique");
        String byDefault = fail(SOURCE + """
                destinations:
                  - {type: jsonl, directory: a}
                  - {type: jsonl, directory: b}
                """);
        assertThat(byDefault).contains("'jsonl' is used by two destinations").contains("named after its type");
    }

    @Test
    void aJsonlDestinationNeedsExactlyOneOfDirectoryAndStdout() {
        assertThat(fail(SOURCE + "destinations:\n  - {name: f, type: jsonl}\n"))
                .contains("config: destinations[0].directory is required for a jsonl destination").contains("destinations[0].stdout: true");
        assertThat(fail(SOURCE + "destinations:\n  - {name: f, type: jsonl, directory: d, stdout: true}\n"))
                .contains("destinations[0].directory and destinations[0].stdout: true are both set; keep one");
    }

    @Test
    void anUnknownDestinationTypeListsTheKnownOnes() {
        assertThat(fail(SOURCE + "destinations:\n  - {name: k, type: kinesis}\n")).contains("destinations[0].type must be one of postgres, jsonl, duckdb, kafka");
        assertThat(fail(SOURCE + "destinations:\n  - {name: k}\n")).contains("destinations[0].type is required");
    }

    @Test
    void destinationTypesAreTheProvidersOnTheClassPath() {
        assertThat(fail(SOURCE + "destinations:\n  - {name: k, type: kinesis}\n"))
                .contains("destinations[0].type must be one of postgres, jsonl, duckdb, kafka, discard; got 'kinesis'")
                .contains("its DestinationProvider listed in META-INF/services, is on the class path"); // a user's own type: how
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> new ConfigLoader(ENV::get)
                .withProviders(DestinationProviders.of(List.of(new JsonlDestinationProvider())))
                .parse(SOURCE + "destinations:\n  - {name: r, type: postgres, database: r, user: u}\n", dir));
        assertThat(e.getMessage()).contains("destinations[0].type must be one of jsonl; got 'postgres'"
                + " (its module, millrace-sink-postgres, is not on the class path)");
        assertThat(parse(SOURCE + "destinations:\n  - {type: 'null'}\n").destinations()).containsExactly(new DiscardProvider.Config("null"));
        assertThat(fail(SOURCE + "destinations:\n  - {type: discard, directory: d}\n"))
                .contains("destinations[0].directory is not a known setting").contains("known here: name, type)");
    }

    /** A third party's destination: {@code type: probe}, reading a list and a choice. */
    private record Probe(String name, List<String> hosts, Kind mode) implements io.millrace.core.sink.DestinationConfig {
        @Override
        public String type() {
            return "probe";
        }

        @Override
        public io.millrace.core.sink.Sink newSink() {
            return new io.millrace.core.sink.NullSink(name);
        }
    }

    @Test
    void aProviderOnTheClassPathReadsItsOwnKeysWithTheLoadersMessages() {
        io.millrace.core.sink.DestinationProvider probe = new io.millrace.core.sink.DestinationProvider() {
            @Override
            public String type() {
                return "probe";
            }

            @Override
            public io.millrace.core.sink.DestinationConfig configure(String name, io.millrace.core.sink.DestinationSettings s,
                                                                     io.millrace.core.sink.DestinationContext context) {
                s.allow("hosts", "mode");
                return new Probe(name, s.strings("hosts"), s.choice("mode", Kind.SINK, Kind.class));
            }
        };
        ConfigLoader loader = new ConfigLoader(ENV::get).withProviders(DestinationProviders.of(List.of(probe, new JsonlDestinationProvider())));
        EngineConfig c = loader.parse(SOURCE + "destinations:\n  - {name: p, type: probe, hosts: [a, b], mode: connection}\n", dir);
        assertThat(c.destinations()).containsExactly(new Probe("p", List.of("a", "b"), Kind.CONNECTION));
        MillraceException bad = catchThrowableOfType(MillraceException.class,
                () -> loader.parse(SOURCE + "destinations:\n  - {type: probe, mode: loud}\n", dir));
        assertThat(bad.getMessage()).contains("config: destinations[0].mode must be one of config, connection").contains("got 'loud'");
        MillraceException typo = catchThrowableOfType(MillraceException.class,
                () -> loader.parse(SOURCE + "destinations:\n  - {type: probe, hots: [a]}\n", dir));
        assertThat(typo.getMessage()).contains("config: destinations[0].hots is not a known setting; did you mean 'hosts'?");
    }

    @Test
    void requiredSourceSettingsSayWhatToWrite() {
        assertThat(fail("source:\n  user: u\n" + FILES)).contains("config: source.database is required (e.g. database: app)");
        assertThat(fail(FILES)).contains("config: source.database is required");
    }

    @Test
    void everyMessageIsOneKindWhateverTheSection() {
        // The exit code of every case above is 2; a few that go through other constructors:
        for (String yaml : List.of(
                SOURCE + "destinations:\n  - {name: f, type: jsonl, stdout: true}\n",
                SOURCE + "  ssl: {mode: sometimes}\n" + FILES)) {
            fail(yaml);
        }
    }

    private static final String HOSTS = """
            source:
              database: shop
              user: cdc
              tables: [public.orders]
            """;

    @Test
    void severalHostsAndAFailoverSlotAreReadAndChecked() {
        EngineConfig c = parse(HOSTS.replace("  database:", "  hosts: [db1:5432, '[::1]:5433']\n  failover: true\n  database:") + FILES);
        assertThat(c.source().hosts()).extracting(Object::toString).containsExactly("db1:5432", "[::1]:5433");
        assertThat(c.source().host()).isEqualTo("db1");
        assertThat(c.source().port()).isEqualTo(5432);
        assertThat(c.source().failover()).isTrue();
        assertThat(c.source().where()).isEqualTo("db1:5432,[::1]:5433/shop");
        EngineConfig single = parse(SOURCE + FILES);
        assertThat(single.source().hosts()).extracting(Object::toString).containsExactly("127.0.0.1:5432");
        assertThat(single.source().failover()).isFalse();

        assertThat(fail(HOSTS.replace("  database:", "  hosts: [db1]\n  database:") + FILES))
                .contains("source.hosts must be a list of host:port").contains("got 'db1'");
        assertThat(fail(HOSTS.replace("  database:", "  hosts: ['db1:99999']\n  database:") + FILES)).contains("source.hosts");
        assertThat(fail(HOSTS.replace("  database:", "  hosts: []\n  database:") + FILES)).contains("source.hosts is an empty list");
        assertThat(fail(HOSTS.replace("  database:", "  hosts: [db1:5432, db1:5432]\n  database:") + FILES))
                .contains("lists db1:5432 twice");
        assertThat(fail(HOSTS.replace("  database:", "  host: db0\n  hosts: [db1:5432]\n  database:") + FILES))
                .contains("source.hosts and source.host / source.port are both given");
        assertThat(fail(HOSTS.replace("  database:", "  failover: maybe\n  database:") + FILES)).contains("source.failover");
    }

    @Test
    void captureFromAStandbyNeedsThePrimaryBesideItAndNoFailoverSlot() {
        EngineConfig c = parse(HOSTS.replace("  database:", "  hosts: [db1:5432, db2:5432]\n  capture_from: standby\n  database:") + FILES);
        assertThat(c.source().fromStandby()).isTrue();
        assertThat(parse(SOURCE + FILES).source().fromStandby()).as("the default").isFalse();

        assertThat(fail(HOSTS.replace("  database:", "  hosts: [db2:5432]\n  capture_from: standby\n  database:") + FILES))
                .contains("source.capture_from is standby, which needs source.hosts to list the primary and the standby")
                .contains("hosts: [db1:5432, db2:5432]");
        assertThat(fail(SOURCE.replace("  database:", "  capture_from: standby\n  database:") + FILES))
                .contains("source.capture_from is standby, which needs source.hosts");
        assertThat(fail(HOSTS.replace("  database:", "  hosts: [db1:5432, db2:5432]\n  capture_from: standby\n  failover: true\n"
                + "  database:") + FILES)).contains("source.capture_from is standby together with source.failover: true")
                .contains("PostgreSQL makes no failover slot on a standby");
        assertThat(fail(HOSTS.replace("  database:", "  capture_from: replica\n  database:") + FILES)).contains("source.capture_from")
                .contains("primary").contains("standby");
    }
}
