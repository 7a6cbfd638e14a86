// Markdown for stored messages, rendered safely: the renderer builds DOM nodes and puts every piece
// of message text in a text node, so raw HTML in a message shows as text and never runs. It knows
// fenced and inline code, headings, lists, quotes, bold, italics and links; a link whose target is
// not http(s) or mailto (javascript:, data:) stays plain text. No dependencies.
"use strict";

const SAFE_LINK = /^(https?:|mailto:)/i;

function mdInline(text) {
  const nodes = [];
  const pattern = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    if (match[1]) nodes.push(mdNode("code", match[2]));
    else if (match[3] || match[4]) nodes.push(mdNode("strong", ...mdInline(match[3] || match[4])));
    else if (match[5]) nodes.push(mdNode("em", ...mdInline(match[5])));
    else if (SAFE_LINK.test(match[7])) {
      const link = mdNode("a", ...mdInline(match[6]));
      link.href = match[7];
      link.rel = "noopener noreferrer nofollow";
      link.target = "_blank";
      nodes.push(link);
    } else nodes.push(document.createTextNode(match[0]));  // an unsafe target: shown, not linked
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

function mdNode(tag, ...children) {
  const node = document.createElement(tag);
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function renderMarkdown(source) {
  const root = mdNode("div");
  root.className = "markdown";
  const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      const body = [];
      for (i += 1; i < lines.length && !lines[i].trim().startsWith(fence[1]); i += 1) body.push(lines[i]);
      i += 1;
      const code = mdNode("code", body.join("\n"));
      if (fence[2]) code.dataset.language = fence[2];
      root.append(mdNode("pre", code));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      root.append(mdNode("h" + Math.min(6, heading[1].length + 2), ...mdInline(heading[2])));
      i += 1;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+/;
    if (item.test(line)) {
      const list = mdNode(/^\s*\d/.test(line) ? "ol" : "ul");
      for (; i < lines.length && item.test(lines[i]); i += 1) list.append(mdNode("li", ...mdInline(lines[i].replace(item, ""))));
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i += 1) quoted.push(lines[i].replace(/^\s*>\s?/, ""));
      root.append(mdNode("blockquote", ...mdInline(quoted.join("\n"))));
      continue;
    }
    if (!line.trim()) { i += 1; continue; }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !/^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d+[.)]\s)/.test(lines[i]); i += 1) {
      para.push(lines[i]);
    }
    if (!para.length) { para.push(line); i += 1; }
    root.append(mdNode("p", ...mdInline(para.join("\n"))));
  }
  return root;
}
