module egress/tools/supervise

go 1.21
