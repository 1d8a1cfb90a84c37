// The SDK against the committed OpenAPI spec (internal/api/openapi/openapi.yaml),
// offline: the drift check the live tests run against the served spec.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { FIELDS } from "../dist/index.js";
import { assertNoDrift } from "./drift.mjs";

const SPEC = new URL("../../../internal/api/openapi/openapi.yaml", import.meta.url);

// Exported interfaces that are no component schema, and why.
const UNLISTED = {
  StepRevert: "revertToStep's answer, a schema of its own inline in the operation",
  StepElement: "StepResult's element, a schema inline in StepResult",
  KeyRule: "ApprovalPolicy's keys, a schema inline in ApprovalPolicy",
  ClickRegion: "ApprovalPolicy's clicks, a schema inline in ApprovalPolicy",
};

describe("committed spec", () => {
  test("drift: the SDK's operations and interfaces are the committed spec's", () => {
    // merge: the spec shares properties with `<<: *anchor` merge keys.
    assertNoDrift(parse(readFileSync(SPEC, "utf8"), { merge: true }), "the committed spec");
  });

  test("every interface models.ts exports is in FIELDS", () => {
    const src = readFileSync(new URL("../src/models.ts", import.meta.url), "utf8");
    const exported = [...src.matchAll(/^export interface (\w+)/gm)].map((m) => m[1]);
    assert.ok(exported.length > 30, "models.ts's interfaces were not found");
    assert.deepEqual(exported.filter((n) => !(n in FIELDS) && !(n in UNLISTED)), [], "interfaces FIELDS does not list (add them to FIELDS and fieldcheck.ts)");
    assert.deepEqual(Object.keys(UNLISTED).filter((n) => !exported.includes(n) || n in FIELDS), [], "stale UNLISTED entries");
  });
});
