// Typeset the \( \) and \[ \] spans that pymdownx.arithmatex (generic mode)
// leaves in the page, with the KaTeX files shipped in docs/assets/katex.
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: true,
  });
});
