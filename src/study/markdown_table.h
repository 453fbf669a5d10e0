// GitHub-flavoured Markdown tables: a header row, a delimiter row with alignment, body rows. Cells are
// escaped (pipes, newlines), so any text renders as one cell.
#pragma once

#include <string>
#include <vector>

namespace kiln {

class MarkdownTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };
  explicit MarkdownTable(std::vector<Column> columns);

  // Fails unless the row has one cell per column.
  void add_row(std::vector<std::string> cells);
  std::size_t rows() const { return rows_.size(); }
  std::string str() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// The text as one table cell: '|' escaped, line breaks as spaces.
std::string markdown_cell(const std::string& text);

}  // namespace kiln
