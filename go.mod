module github.com/duet-gtk/duet

go 1.26.0

require (
	github.com/diamondburned/gotk4/pkg v0.2.2
	github.com/fsnotify/fsnotify v1.10.1
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.50.0
	golang.org/x/tools v0.52.0
)

require (
	github.com/KarpelesLab/weak v0.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	go4.org/unsafe/assume-no-moving-gc v0.0.0-20231121144256-b99613f794b6 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
