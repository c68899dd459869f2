// Builds and inspects SQLite files from plain SQL in tests, with sql.js (WASM, no
// native build). sql.js has no FTS5, so fixtures it writes carry no FTS tables.
import { readFileSync, writeFileSync } from 'node:fs'
import initSqlJs from 'sql.js'

const SQL = await initSqlJs()

/** Writes a new database file made by running `sql`. */
export function writeDb(path, sql) {
  const db = new SQL.Database()
  db.exec(sql)
  writeFileSync(path, Buffer.from(db.export()))
  db.close()
}

/** Runs a query against a (closed, checkpointed) database file; returns rows as objects. */
export function query(path, sql, params = []) {
  const db = new SQL.Database(readFileSync(path))
  try {
    const stmt = db.prepare(sql)
    stmt.bind(params)
    const rows = []
    while (stmt.step()) rows.push(stmt.getAsObject())
    stmt.free()
    return rows
  } finally {
    db.close()
  }
}
