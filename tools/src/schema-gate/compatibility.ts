/**
 * Avro schema-resolution compatibility (Avro spec, "Schema Resolution"), explained in plain
 * words: can a reader with schema R read every datum written with schema W? Each problem says
 * where (a dotted path) and what to do about it.
 */

/** One reason a reader cannot read a writer's data. */
export interface Break {
  /** Dotted location in the record (`payload.status`), `` for the root. */
  readonly path: string;
  /** Plain words: what breaks and how to fix it. */
  readonly message: string;
}

type Schema = unknown;

interface Named {
  type: string;
  name: string;
  namespace?: string;
  aliases?: string[];
}

const PROMOTIONS: Record<string, readonly string[]> = {
  int: ['int', 'long', 'float', 'double'],
  long: ['long', 'float', 'double'],
  float: ['float', 'double'],
  double: ['double'],
  string: ['string', 'bytes'],
  bytes: ['bytes', 'string'],
  boolean: ['boolean'],
  null: ['null'],
};

const PRIMITIVES = new Set(Object.keys(PROMOTIONS));

/** Lists every reason a reader with `reader` cannot read data written with `writer` (empty: compatible). */
export function readerBreaks(reader: Schema, writer: Schema): Break[] {
  const breaks: Break[] = [];
  check(reader, writer, '', breaks, new Set(), new Map(), new Map(), '', '');
  return breaks;
}

function typeName(schema: Schema): string {
  if (typeof schema === 'string') return schema;
  if (Array.isArray(schema)) return 'union';
  const s = schema as { type?: unknown; logicalType?: unknown };
  if (typeof s.type === 'string' && PRIMITIVES.has(s.type)) return s.type;
  return typeof s.type === 'string' ? s.type : 'unknown';
}

function describe(schema: Schema): string {
  const t = typeName(schema);
  if (t === 'union') return `union [${(schema as Schema[]).map(describe).join(', ')}]`;
  if (t === 'record' || t === 'enum' || t === 'fixed') return `${t} ${shortName((schema as Named).name)}`;
  if (t === 'array') return `array of ${describe((schema as { items: Schema }).items)}`;
  if (t === 'map') return `map of ${describe((schema as { values: Schema }).values)}`;
  return t;
}

function shortName(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? name : name.slice(dot + 1);
}

function fullName(named: Named, enclosing: string): string {
  if (named.name.includes('.')) return named.name;
  const ns = named.namespace ?? enclosing;
  return ns === '' ? named.name : `${ns}.${named.name}`;
}

function namespaceOf(full: string): string {
  const dot = full.lastIndexOf('.');
  return dot < 0 ? '' : full.slice(0, dot);
}

/** Resolves a reference to a named type defined earlier in the same schema. */
function deref(schema: Schema, names: Map<string, Schema>, ns: string): Schema {
  if (typeof schema === 'string' && !PRIMITIVES.has(schema)) {
    return names.get(schema) ?? names.get(ns === '' ? schema : `${ns}.${schema}`) ?? schema;
  }
  return schema;
}

function register(schema: Schema, names: Map<string, Schema>, ns: string): string {
  const t = typeName(schema);
  if (t === 'record' || t === 'enum' || t === 'fixed') {
    const full = fullName(schema as Named, ns);
    names.set(full, schema);
    return namespaceOf(full);
  }
  return ns;
}

function at(path: string): string {
  return path === '' ? 'the record' : `"${path}"`;
}

function check(
  reader: Schema,
  writer: Schema,
  path: string,
  breaks: Break[],
  seen: Set<string>,
  readerNames: Map<string, Schema>,
  writerNames: Map<string, Schema>,
  readerNs: string,
  writerNs: string,
): void {
  reader = deref(reader, readerNames, readerNs);
  writer = deref(writer, writerNames, writerNs);
  const rNs = register(reader, readerNames, readerNs);
  const wNs = register(writer, writerNames, writerNs);
  const rt = typeName(reader);
  const wt = typeName(writer);

  if (wt === 'union') {
    // Every branch the writer may have used must be readable.
    for (const branch of writer as Schema[]) check(reader, branch, path, breaks, seen, readerNames, writerNames, rNs, wNs);
    return;
  }
  if (rt === 'union') {
    const branches = (reader as Schema[]).map((b) => deref(b, readerNames, rNs));
    const fits = branches.some((b) => {
      const sub: Break[] = [];
      check(b, writer, path, sub, new Set(seen), readerNames, writerNames, rNs, wNs);
      return sub.length === 0;
    });
    if (fits) return;
    // Explain through the branch of the same kind, when there is one (e.g. the record in ["null", record]).
    const same = branches.find((b) => typeName(b) === wt);
    if (same !== undefined) check(same, writer, path, breaks, seen, readerNames, writerNames, rNs, wNs);
    else breaks.push({ path, message: `at ${at(path)} the reader's ${describe(reader)} has no branch that reads the writer's ${describe(writer)}` });
    return;
  }
  if (PRIMITIVES.has(wt)) {
    if (!PROMOTIONS[wt].includes(rt)) {
      breaks.push({ path, message: `type of ${at(path)} changed from ${describe(writer)} to ${describe(reader)}: ${wt} values cannot be read as ${rt}${promotionHint(wt)}` });
    }
    return;
  }
  if (rt !== wt) {
    breaks.push({ path, message: `type of ${at(path)} changed from ${describe(writer)} to ${describe(reader)}` });
    return;
  }
  switch (rt) {
    case 'record':
      return checkRecord(reader as RecordSchema, writer as RecordSchema, path, breaks, seen, readerNames, writerNames, rNs, wNs);
    case 'enum':
      return checkEnum(reader as EnumSchema, writer as EnumSchema, path, breaks);
    case 'fixed': {
      const r = reader as Named & { size: number };
      const w = writer as Named & { size: number };
      if (!namesMatch(r, w)) breaks.push({ path, message: `fixed ${at(path)} was renamed from ${shortName(w.name)} to ${shortName(r.name)} without an alias` });
      if (r.size !== w.size) breaks.push({ path, message: `fixed ${at(path)} changed size from ${w.size} to ${r.size} bytes` });
      return;
    }
    case 'array':
      return check((reader as { items: Schema }).items, (writer as { items: Schema }).items, `${path}[]`, breaks, seen, readerNames, writerNames, rNs, wNs);
    case 'map':
      return check((reader as { values: Schema }).values, (writer as { values: Schema }).values, `${path}{}`, breaks, seen, readerNames, writerNames, rNs, wNs);
    default:
      breaks.push({ path, message: `unsupported schema type "${rt}" at ${at(path)}` });
  }
}

function promotionHint(wt: string): string {
  const allowed = PROMOTIONS[wt].filter((t) => t !== wt);
  return allowed.length === 0 ? '' : ` (${wt} may only widen to ${allowed.join(', ')})`;
}

interface RecordSchema extends Named {
  fields: { name: string; type: Schema; default?: unknown; aliases?: string[] }[];
}

interface EnumSchema extends Named {
  symbols: string[];
  default?: string;
}

function namesMatch(reader: Named, writer: Named): boolean {
  const w = shortName(writer.name);
  return shortName(reader.name) === w || (reader.aliases ?? []).some((a) => shortName(a) === w);
}

function checkRecord(
  reader: RecordSchema,
  writer: RecordSchema,
  path: string,
  breaks: Break[],
  seen: Set<string>,
  readerNames: Map<string, Schema>,
  writerNames: Map<string, Schema>,
  rNs: string,
  wNs: string,
): void {
  if (!namesMatch(reader, writer)) {
    breaks.push({ path, message: `record ${at(path)} was renamed from ${shortName(writer.name)} to ${shortName(reader.name)}: add "aliases": ["${writer.name}"] to the new record` });
    return;
  }
  // Recursive types: a pair already under check is assumed fine (its other fields are checked where first met).
  const pair = `${fullName(reader, rNs)}<-${fullName(writer, wNs)}`;
  if (seen.has(pair)) return;
  seen.add(pair);
  const writerFields = new Map(writer.fields.map((f) => [f.name, f]));
  const readerFieldNames = new Set(reader.fields.flatMap((f) => [f.name, ...(f.aliases ?? [])]));
  const unreadWriterFields = writer.fields.filter((f) => !readerFieldNames.has(f.name));
  for (const field of reader.fields) {
    const fieldPath = path === '' ? field.name : `${path}.${field.name}`;
    const source = writerFields.get(field.name) ?? (field.aliases ?? []).map((a) => writerFields.get(a)).find((f) => f !== undefined);
    if (source !== undefined) {
      check(field.type, source.type, fieldPath, breaks, seen, readerNames, writerNames, rNs, wNs);
      continue;
    }
    if (Object.prototype.hasOwnProperty.call(field, 'default')) continue;
    const renamedFrom = unreadWriterFields.find((w) => readerBreaks(field.type, w.type).length === 0);
    breaks.push({
      path: fieldPath,
      message:
        renamedFrom !== undefined
          ? `field "${fieldPath}" is not in the writer's schema and has no default — it looks renamed from "${renamedFrom.name}": the reader needs "aliases": ["${renamedFrom.name}"] on "${field.name}" (readers already deployed cannot get one, so a rename is never FORWARD compatible: add the new field beside the old one, with a default)`
          : `field "${fieldPath}" is not in the writer's schema and has no default: the reader cannot fill it (give it a default, or keep it in the writer's schema)`,
    });
  }
}

function checkEnum(reader: EnumSchema, writer: EnumSchema, path: string, breaks: Break[]): void {
  if (!namesMatch(reader, writer)) {
    breaks.push({ path, message: `enum ${at(path)} was renamed from ${shortName(writer.name)} to ${shortName(reader.name)}: add "aliases": ["${writer.name}"]` });
    return;
  }
  const readerSymbols = new Set(reader.symbols);
  const missing = writer.symbols.filter((s) => !readerSymbols.has(s));
  if (missing.length > 0 && (reader.default === undefined || !readerSymbols.has(reader.default))) {
    breaks.push({
      path,
      message: `enum ${at(path)}: the writer may write ${missing.map((s) => `"${s}"`).join(', ')}, which the reader's ${shortName(reader.name)} does not have and it declares no default symbol (keep the symbol, or add "default" to the enum)`,
    });
  }
}
