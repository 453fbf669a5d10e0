#include "study/markdown_table.h"

#include "core/error.h"

namespace kiln {

std::string markdown_cell(const std::string& text) {
  std::string cell;
  for (const char c : text) {
    if (c == '|') {
      cell += "\\|";
    } else if (c == '\n' || c == '\r') {
      cell += ' ';
    } else {
      cell += c;
    }
  }
  return cell.empty() ? " " : cell;
}

MarkdownTable::MarkdownTable(std::vector<Column> columns) : columns_(std::move(columns)) {
  require(!columns_.empty(), "a table needs at least one column");
}

void MarkdownTable::add_row(std::vector<std::string> cells) {
  require(cells.size() == columns_.size(), "table row has ", cells.size(), " cells for ", columns_.size(),
          " columns");
  rows_.push_back(std::move(cells));
}

std::string MarkdownTable::str() const {
  // Appended piece by piece: g++ 12 warns (wrongly) on chained string concatenation here.
  std::string out = "|";
  const auto add_cell = [&](const std::string& text) {
    out.append(" ").append(markdown_cell(text)).append(" |");
  };
  for (const Column& column : columns_) add_cell(column.title);
  out.append("\n|");
  for (const Column& column : columns_) out.append(column.align == Align::kRight ? " ---: |" : " --- |");
  out.append("\n");
  for (const auto& row : rows_) {
    out.append("|");
    for (const std::string& cell : row) add_cell(cell);
    out.append("\n");
  }
  return out;
}

}  // namespace kiln
