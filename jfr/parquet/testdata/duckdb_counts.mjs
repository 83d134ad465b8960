// Reads every Parquet file named on the command line with DuckDB (all columns, every row) and prints
// {"file": rows, ...}. DUCKDB_NODE is the directory @duckdb/node-api is installed in.
import { createRequire } from 'node:module';
const require = createRequire(process.env.DUCKDB_NODE + '/');
const { DuckDBInstance } = require('@duckdb/node-api');
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const out = {};
for (const f of process.argv.slice(2)) {
  const q = "SELECT * FROM read_parquet('" + f.replaceAll("'", "''") + "')";
  const r = await c.runAndReadAll(q);
  out[f] = r.getRows().length;
}
console.log(JSON.stringify(out));
