// Package apidoc keeps the API section of each public package's doc in
// step with the package: its test fails when a package exports a name the
// section does not link, or the section links a name the package does not
// export.
//
// The convention it checks: a package's doc.go has a "# API" heading,
// followed by a list whose items link every exported name of the package
// with Go doc links, [Name] for a function, type, variable or constant and
// [Type.Method] for a method (the Error and Unwrap methods that make a
// type an error excepted). Anything else in the items is free text, and
// links to other packages ([eventloop.Run]) are not checked here.
package apidoc
