module sandbox-executable

go 1.26
