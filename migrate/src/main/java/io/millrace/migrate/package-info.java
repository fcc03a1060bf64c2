/**
 * {@code millrace migrate}: a PostgreSQL-to-PostgreSQL migration with seconds of write downtime (docs/MIGRATE.md).
 *
 * <p>Public: {@link io.millrace.migrate.Migration} (plan, follow, verify, cutover, status, abort, releaseSource) and what
 * it returns ({@link io.millrace.migrate.Plan}, {@link io.millrace.migrate.VerifyReport},
 * {@link io.millrace.migrate.CutoverReport}, {@link io.millrace.migrate.MigrationState}). Package-private, the engines
 * behind it: {@code Planner} (the checks, a decision only), {@code SourceCatalog} (what is read of the source catalog),
 * {@code SchemaWriter} (the DDL before and after the copy), {@code Verifier} (keyset chunk checksums, re-check, repair),
 * {@code Cutover} (fence, marker, sequences; INV: FENCE) and {@code StateStore} (the recorded steps on the target). The
 * copy and the stream are Millrace's own engine ({@link io.millrace.api.Millrace}) into the postgres destination.
 */
package io.millrace.migrate;
