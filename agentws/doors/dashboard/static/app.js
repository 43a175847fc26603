// Progressive enhancement only: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.submit());
  }
  for (const all of document.querySelectorAll("[data-select-all]")) {
    const boxes = all.form.querySelectorAll('input[type="checkbox"][name="id"]');
    all.hidden = boxes.length === 0;
    all.addEventListener("change", () => {
      for (const box of boxes) box.checked = all.checked;
    });
  }
  const ws = document.querySelector("[data-workspace-switch] select");
  if (ws) ws.addEventListener("change", () => ws.form.submit());
  // The audit filters: another workspace brings its own groups and tokens to the menus,
  // so the group and token of the one before are cleared (they would match nothing).
  const auditWs = document.querySelector("select[data-audit-workspace]");
  if (auditWs) {
    auditWs.addEventListener("change", () => {
      for (const name of ["group", "token"]) {
        const menu = auditWs.form.elements.namedItem(name);
        if (menu) menu.value = "";
      }
      auditWs.form.submit();
    });
  }
});

// --- copy buttons, relative times ---------------------------------------------------------
// Copy buttons (templates/_copy.html) are hidden until this runs; each says what it copies,
// and the status beside it says "Copied". Relative times (<time data-ago>, the `ago`
// filter) are brought up to date while the page stays open.
document.addEventListener("DOMContentLoaded", () => {
  const status = (button, text) => {
    const box = document.querySelector(`[data-copy-status="${CSS.escape(button.dataset.copy)}"]`);
    if (box) box.textContent = text;
  };
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent);
        status(button, "Copied");
      } catch {
        // No clipboard (an http:// page, a refused permission): select it for Ctrl+C.
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        status(button, "Selected: press Ctrl+C (⌘C) to copy");
      }
      window.setTimeout(() => status(button, ""), 4000);
    });
  }
  const units = [["d", 86400], ["h", 3600], ["min", 60]];
  const ago = (iso) => {
    const seconds = Math.floor((Date.now() - Date.parse(iso)) / 1000);
    for (const [unit, size] of units) {
      if (seconds >= size) return `${Math.floor(seconds / size)} ${unit} ago`;
    }
    return `${Math.max(0, seconds)} s ago`;
  };
  const refresh = () => {
    for (const time of document.querySelectorAll("time[data-ago][datetime]")) {
      const text = ago(time.getAttribute("datetime"));
      if (time.textContent !== text) time.textContent = text;
    }
  };
  if (document.querySelector("time[data-ago]")) window.setInterval(refresh, 15000);
});
