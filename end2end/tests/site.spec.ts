import { test, expect } from "./fixtures";

test("the wasm bundle is served precompressed with its content type", async ({ request }) => {
  const res = await request.get("/pkg/paddlecloud.wasm", { headers: { "accept-encoding": "gzip" } });
  expect(res.status()).toBe(200);
  expect(res.headers()["content-encoding"]).toBe("gzip");
  expect(res.headers()["content-type"]).toBe("application/wasm");
});

test("health answers with the version", async ({ request }) => {
  const res = await request.get("/healthz");
  expect(res.status()).toBe(200);
  expect(await res.json()).toMatchObject({ status: "ok", version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
});
