// Uses dblock's public API the way a service would, to prove the installed package links.
#include <dblock/error.hpp>
#include <dblock/libpqxx.hpp>
#include <dblock/migrator.hpp>
#include <dblock/open.hpp>
#include <dblock/url.hpp>
#include <iostream>

int main() {
  auto url = dblock::DatabaseUrl::parse("postgresql://app:secret@127.0.0.1:1/app");
  std::cout << url.redacted() << "\n";
  std::cout << dblock::builtin_migrations(url.dialect).size() << " migrations\n";
  try {
    dblock::connect_pqxx(url);  // nothing listens on port 1
  } catch (const dblock::Error& e) {
    std::cout << dblock::to_string(e.code()) << "\n";
    return e.code() == dblock::ErrorCode::kConnectFailed ? 0 : 1;
  }
  return 1;
}
