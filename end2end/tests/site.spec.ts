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

test("a page loads only its own wasm modules, served for revalidation", async ({ page, open, hydrated }) => {
  await signUp(page, open, newAccount("split"));
  const loaded: string[] = [];
  page.on("request", (req) => {
    if (req.url().endsWith(".wasm")) loaded.push(new URL(req.url()).pathname);
  });
  await open("/jobs");
  if (hydrated) {
    // The page's module (and shared chunks) come with it; other pages' do not.
    expect(loaded.some((p) => /^\/pkg\/split___jobs_route_view_\d+\.wasm$/.test(p)), loaded.join(" ")).toBe(true);
    expect(loaded.some((p) => p.includes("account_route") || p.includes("paddle_board"))).toBe(false);
  }
  for (const path of ["/pkg/paddlecloud.wasm", ...loaded.slice(0, 1)]) {
    const res = await page.request.get(path);
    expect(res.status()).toBe(200);
    expect(res.headers()["content-type"]).toBe("application/wasm");
    expect(res.headers()["cache-control"]).toBe("no-cache");
  }
});
