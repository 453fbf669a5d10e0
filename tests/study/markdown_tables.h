// A strict reader of GitHub Markdown tables, for checking that reports render: every table has a header
// row, a delimiter row of ---, ---: or :--- cells, and body rows with as many cells as the header.
#pragma once

#include <string>
#include <vector>

namespace kiln::testing {

struct ParsedTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Splits "| a | b \| c |" into {"a", "b \| c"}; escaped pipes stay in their cell.
inline std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (line[i] == '|') {
      const auto first = cell.find_first_not_of(' ');
      const auto last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

// Every table in `markdown`; `errors` gets one line per malformed table.
inline std::vector<ParsedTable> parse_tables(const std::string& markdown, std::vector<std::string>& errors) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < markdown.size()) {
    const std::size_t end = markdown.find('\n', start);
    lines.push_back(markdown.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::vector<ParsedTable> tables;
  bool in_code = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) == 0) in_code = !in_code;
    if (in_code || lines[i].rfind("|", 0) != 0) continue;
    ParsedTable table;
    table.header = table_cells(lines[i]);
    if (i + 1 >= lines.size() || lines[i + 1].rfind("|", 0) != 0) {
      errors.push_back("line " + std::to_string(i + 1) + ": a table row with no delimiter row after it");
      continue;
    }
    const auto delimiter = table_cells(lines[i + 1]);
    bool valid = delimiter.size() == table.header.size() && !table.header.empty() && lines[i].back() == '|' &&
                 lines[i + 1].back() == '|';
    for (const std::string& d : delimiter) {
      valid = valid && (d == "---" || d == "---:" || d == ":---" || d == ":---:");
    }
    if (!valid) errors.push_back("line " + std::to_string(i + 2) + ": bad delimiter row under " + lines[i]);
    std::size_t row = i + 2;
    for (; row < lines.size() && lines[row].rfind("|", 0) == 0; ++row) {
      auto cells = table_cells(lines[row]);
      if (cells.size() != table.header.size() || lines[row].back() != '|') {
        errors.push_back("line " + std::to_string(row + 1) + ": " + std::to_string(cells.size()) +
                         " cells under a header of " + std::to_string(table.header.size()));
      }
      table.rows.push_back(std::move(cells));
    }
    tables.push_back(std::move(table));
    i = row;
  }
  return tables;
}

}  // namespace kiln::testing
