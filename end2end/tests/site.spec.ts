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

test("a page loads the console's one wasm module, served for revalidation", async ({ page, open }) => {
  await signUp(page, open, newAccount("wasm"));
  const loaded: string[] = [];
  page.on("request", (req) => {
    if (req.url().endsWith(".wasm")) loaded.push(new URL(req.url()).pathname);
  });
  await open("/jobs");
  // Islands: the page's interactive parts hydrate from one module, no other
  // (the page preloads it, which a browser does with JavaScript off too).
  expect(loaded).toEqual(["/pkg/paddlecloud.wasm"]);
  const res = await page.request.get("/pkg/paddlecloud.wasm");
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toBe("application/wasm");
  expect(res.headers()["cache-control"]).toBe("no-cache");
});
