import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, Page } from "./fixtures";

// The replicas run the SDK's predict server with this Python (global-setup.ts
// hands the same one to the server); it needs paddlepaddle.
export const PYTHON = process.env.PADDLECLOUD_SERVING_PYTHON ?? "python3";
const EXPORT = resolve(__dirname, "../../sdk/python/tests/fixtures/export_tiny_model.py");

/** The tiny model's files (`y = x @ W + b`: [[1, 2, 3, 4]] gives [[0.5, 12.0]]), exported now. */
export function exportTinyModel(): Record<string, Buffer> {
  const dir = mkdtempSync(join(tmpdir(), "pc-tiny-model-"));
  const out = execFileSync(PYTHON, [EXPORT, dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const made = JSON.parse(out.trim().split("\n").pop()!) as { files: string[] };
  const tiny = Object.fromEntries(made.files.map((f) => [f, readFileSync(join(dir, f))]));
  rmSync(dir, { recursive: true, force: true });
  expect(Object.keys(tiny).sort()).toEqual(["inference.json", "inference.pdiparams"]);
  return tiny;
}

/** Registers a model with one ready version holding `files`, through the REST API with the page's session. */
export async function registerModel(page: Page, account: string, name: string, files: Record<string, Buffer>) {
  const made = await page.request.post("/api/v1/models", { data: { name } });
  expect(made.status(), await made.text()).toBe(201);
  const started = await page.request.post(`/api/v1/models/${account}/${name}/versions`, {
    data: { description: "e2e" },
  });
  expect(started.status(), await started.text()).toBeLessThan(300);
  const { version } = await started.json();
  expect(version).toBe(1);
  for (const [path, body] of Object.entries(files)) {
    const put = await page.request.put(`/api/v1/models/${account}/${name}/files/${path}?version=${version}`, {
      data: body,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(put.status(), await put.text()).toBe(201);
  }
  const finished = await page.request.post(`/api/v1/models/${account}/${name}/versions/${version}/finish`);
  expect(finished.status(), await finished.text()).toBe(200);
}
