"""Independent Delta reader for libs/lake interop tests: delta-rs via the `deltalake` package.

usage: delta_probe.py <command> <table-path> [args...]; prints one JSON document.
  read [version]            rows (sorted by all columns), version, protocol, partition columns
  txn <appId>               transaction_version(appId)
  history                   [{version, operation, isBlindAppend}], newest first
  adds                      add actions (path, size, num_records, partition values, min/max)
  write <json-rows> <mode>  writes rows with deltalake.write_deltalake (append|overwrite)
  checkpoint                delta-rs writes a checkpoint of the latest version
  timestamp <iso>           version loaded as of a timestamp
"""
import datetime
import decimal
import json
import os
import sys

from deltalake import DeltaTable, write_deltalake
import pyarrow as pa


def jsonable(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    return v


def rows_of(table):
    rows = [{k: jsonable(v) for k, v in r.items()} for r in table.to_pylist()]
    rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return rows


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if cmd == "write":
        rows = json.loads(args[0])
        write_deltalake(path, pa.Table.from_pylist(rows), mode=args[1])
        print(json.dumps({"version": DeltaTable(path).version()}))
        return
    dt = DeltaTable(path)
    if cmd == "read":
        if args:
            dt = DeltaTable(path, version=int(args[0]))
        p = dt.protocol()
        print(json.dumps({
            "version": dt.version(),
            "protocol": [p.min_reader_version, p.min_writer_version],
            "partitionColumns": dt.metadata().partition_columns,
            "columns": [f.name for f in dt.schema().fields],
            "rows": rows_of(dt.to_pyarrow_table()),
        }, default=str))
    elif cmd == "txn":
        print(json.dumps({"version": dt.transaction_version(args[0])}))
    elif cmd == "history":
        print(json.dumps([{"version": h.get("version"), "operation": h.get("operation"), "isBlindAppend": h.get("isBlindAppend")} for h in dt.history()], default=str))
    elif cmd == "adds":
        t = dt.get_add_actions(flatten=True)
        t = t.to_pyarrow() if hasattr(t, "to_pyarrow") else t
        print(json.dumps([{k: jsonable(v) for k, v in r.items()} for r in pa.table(t).to_pylist()], default=str))
    elif cmd == "checkpoint":
        dt.create_checkpoint()
        print(json.dumps({"version": dt.version()}))
    elif cmd == "timestamp":
        dt.load_as_version(args[0])
        print(json.dumps({"version": dt.version()}))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # Skip interpreter teardown: pyarrow/delta-rs thread pools occasionally abort there
    # ("terminate called without an active exception") after the answer was printed.
    os._exit(0)
