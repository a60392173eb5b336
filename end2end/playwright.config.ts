import { defineConfig } from "@playwright/test";

// Debian's chromium; Playwright cannot download its own browser here.
const chromium = {
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
};

export default defineConfig({
  testDir: "./tests",
  // A fresh server on a free port with a throwaway data dir (see global-setup.ts).
  globalSetup: "./global-setup.ts",
  fullyParallel: true,
  workers: process.env.CI ? 2 : undefined,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: process.env.CI ? [["list"]] : [["list"], ["html", { open: "never" }]],
  use: {
    launchOptions: chromium,
    trace: "retain-on-failure",
  },
  // Every spec runs twice: once hydrated, once with JavaScript off, which
  // proves the server-rendered path (forms post, errors show) on its own.
  projects: [
    { name: "hydrated", use: { javaScriptEnabled: true } },
    { name: "no-js", use: { javaScriptEnabled: false } },
  ],
});
