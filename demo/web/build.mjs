// Bundle src/main.ts with esbuild into ../../server/demo/static/demo/demo.js and copy the page.
// The output is committed: `pip install livetok` needs no Node.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "server", "demo", "static", "demo");
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) rmSync(join(out, f), { recursive: true });

await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  outfile: join(out, "demo.js"),
  legalComments: "eof", // keeps CodeMirror's MIT notices in the bundle
  logLevel: "info",
});
for (const f of ["index.html", "demo.css"]) copyFileSync(join(here, "src", f), join(out, f));
console.log(`built ${out}`);
