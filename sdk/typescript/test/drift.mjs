// The drift check, shared by the offline test (the committed spec) and the
// live one (the spec the server serves): the SDK's operations are the spec's,
// and each FIELDS list is its schema's properties, both ways. (No tests here.)
import assert from "node:assert/strict";
import { EXCLUDED, FIELDS, OPERATIONS } from "../dist/index.js";

/** Asserts that the OpenAPI document spec (parsed) is the SDK's contract; where names it in messages. */
export function assertNoDrift(spec, where) {
  const ops = {};
  for (const [path, item] of Object.entries(spec.paths))
    for (const [method, op] of Object.entries(item)) if (op?.operationId) ops[op.operationId] = [method.toUpperCase(), path];
  for (const [op, want] of Object.entries(OPERATIONS)) assert.deepEqual(ops[op], [...want], `the SDK's ${op} is not ${where}'s`);
  assert.deepEqual(Object.keys(ops).filter((o) => !(o in OPERATIONS) && !(o in EXCLUDED)), [], `operations of ${where} the SDK neither calls nor excludes`);
  assert.deepEqual(Object.keys(EXCLUDED).filter((o) => !(o in ops)), [], `exclusions ${where} does not have`);
  for (const [name, { schema, fields }] of Object.entries(FIELDS)) {
    const s = spec.components.schemas[schema];
    assert.ok(s, `${name}: ${where} has no schema ${schema}`);
    const props = Object.keys(s.properties ?? {});
    assert.deepEqual(props.filter((p) => !fields.includes(p)), [], `${name}: properties of schema ${schema} in ${where} that the interface lacks`);
    assert.deepEqual(fields.filter((f) => !props.includes(f)), [], `${name}: fields the interface has that schema ${schema} in ${where} lacks`);
  }
}
