// Progressive enhancement only: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("[data-copy]")) {
    button.addEventListener("click", async () => {
      const text = document.getElementById(button.dataset.copy).textContent;
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "Copied";
      } catch {
        button.textContent = "Select and copy";
      }
    });
  }
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
});
