from kubectl_desched.cli.launch import main

main()
