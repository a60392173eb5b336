import { test, expect, newAccount, signUp } from "./fixtures";

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

test("a page preloads only its own wasm modules, served for revalidation", async ({ page, open }) => {
  await signUp(page, open, newAccount("split"));
  // The HTML as the server sends it (hydration may rearrange <head>).
  const html = await (await page.request.get("/jobs")).text();
  const preloads = [...html.matchAll(/<link[^>]*href="([^"]+\.wasm)"[^>]*>/g)].map((m) => m[1]);
  expect(preloads.some((href) => /\/pkg\/split___jobs_route_view_\d+\.wasm$/.test(href))).toBe(true);
  expect(preloads.some((href) => href.includes("account_route"))).toBe(false);
  const res = await page.request.get(preloads.find((h) => h.includes("split___jobs_route"))!);
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toBe("application/wasm");
  expect(res.headers()["cache-control"]).toBe("no-cache");
});
