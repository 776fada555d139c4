from kubectl_desched.launch import main

main()
