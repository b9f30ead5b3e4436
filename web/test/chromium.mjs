// chromium.mjs - Debian's Chromium, headless, as the console's browser tests and benchmarks
// start it (browser.mjs, history.mjs, history-load.mjs, page-cpu.mjs).
//
// Chromium's headless mode is the full browser without a screen: each new window builds the
// browser's own interface, including the address bar's suggestion popup, a WebUI application
// of its own (chrome://omnibox-popup.top-chrome: about 140 module loads per window, traced on
// Chromium 156).  On a 2-core machine that work runs beside the page under test and was a
// third of a fresh load of the console's week view (docs/console.md, "Usage history:
// figures").  A person's browser built it once when it started, not for each page, so it is
// turned off here (the WebUIOmnibox* features); BROWSER_UI=1 keeps Chromium's default, for the
// benchmark's side-by-side line.
import { chromium } from 'playwright-core';

export const BROWSER_UI = process.env.BROWSER_UI === '1';

export function launch(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    chromiumSandbox: false,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
      ...(BROWSER_UI ? [] : ['--disable-features=WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup']),
      ...extraArgs],
  });
}
