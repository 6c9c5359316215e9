// The commit a release build was made from. packaging/deb/build writes it
// here for its build and puts this file back afterwards; a plain `swift
// build` leaves it nil, and `remolo version` then asks git at run time.
let buildCommit: String? = nil
