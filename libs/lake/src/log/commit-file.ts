import { lakeError } from '../errors';
import { partitionValuesOf, type Action, type AddAction, type CommitActions, type RemoveAction, type TxnAction } from './actions';
import { parseJsonLossless, stringifyJson } from './json';

/**
 * Parses one `N.json` commit. An empty file, a torn line (no valid JSON) or a line that is not
 * an action object is LAKE_LOG_CORRUPT naming the file: never a half-read commit.
 */
export function parseCommit(version: number, key: string, body: Uint8Array): CommitActions {
  const text = Buffer.from(body).toString('utf8');
  const commit: CommitActions = { version, adds: [], removes: [], txns: [] };
  const lines = text.split('\n');
  let actions = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    let parsed: unknown;
    try {
      parsed = parseJsonLossless(line);
    } catch (cause) {
      throw lakeError('LAKE_LOG_CORRUPT', `${key} line ${i + 1} is not valid JSON (torn or corrupt commit)`, { cause, details: { key, line: i + 1 } });
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw lakeError('LAKE_LOG_CORRUPT', `${key} line ${i + 1} is not an action object`, { details: { key, line: i + 1 } });
    }
    actions++;
    applyAction(commit, parsed as Record<string, unknown>, key);
  }
  if (actions === 0) throw lakeError('LAKE_LOG_CORRUPT', `${key} is empty`, { details: { key } });
  return commit;
}

function applyAction(commit: CommitActions, action: Record<string, unknown>, key: string): void {
  if (action.add) {
    const add = action.add as AddAction;
    if (typeof add.path !== 'string') throw lakeError('LAKE_LOG_CORRUPT', `${key}: add action without a path`, { details: { key } });
    add.partitionValues = partitionValuesOf(add.partitionValues);
    add.size = Number(add.size);
    commit.adds.push(add);
  } else if (action.remove) {
    const remove = action.remove as RemoveAction;
    if (typeof remove.path !== 'string') throw lakeError('LAKE_LOG_CORRUPT', `${key}: remove action without a path`, { details: { key } });
    commit.removes.push(remove);
  } else if (action.txn) {
    const txn = action.txn as TxnAction;
    if (typeof txn.appId !== 'string') throw lakeError('LAKE_LOG_CORRUPT', `${key}: txn action without an appId`, { details: { key } });
    commit.txns.push(txn);
  } else if (action.metaData) {
    const md = action.metaData as CommitActions['metaData'] & object;
    if (typeof md.schemaString !== 'string') throw lakeError('LAKE_LOG_CORRUPT', `${key}: metaData without a schemaString`, { details: { key } });
    md.partitionColumns ??= [];
    md.configuration ??= {};
    commit.metaData = md;
  } else if (action.protocol) {
    commit.protocol = action.protocol as CommitActions['protocol'];
  } else if (action.commitInfo) {
    commit.commitInfo = action.commitInfo as Record<string, unknown>;
  }
  // Unknown actions (cdc, domainMetadata, ...) are ignored; the protocol check refuses tables
  // whose features would make ignoring them wrong.
}

/** Serialises actions as a commit file: one action per line, commitInfo first, trailing newline. */
export function serializeCommit(actions: readonly Action[]): Uint8Array {
  const ordered = [...actions].sort((a, b) => Number('commitInfo' in b) - Number('commitInfo' in a));
  return Buffer.from(ordered.map((a) => stringifyJson(a)).join('\n') + '\n', 'utf8');
}
